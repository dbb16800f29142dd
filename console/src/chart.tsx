// A line chart of numbered series, drawn by uPlot into a canvas.
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

const COLORS = ["#2563eb", "#dc2626", "#059669", "#9333ea"];

export function LineChart({ x, series, label }: { x: number[]; series: Array<{ name: string; values: Array<number | null> }>; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const names = series.map((s) => s.name).join("|");
  useEffect(() => {
    if (!box.current) return;
    plot.current = new uPlot(
      {
        width: Math.max(320, box.current.clientWidth || 640),
        height: 240,
        scales: { x: { time: false } },
        axes: [{ label: "step" }, {}],
        series: [{ label: "step" }, ...series.map((s, i) => ({ label: s.name, stroke: COLORS[i % COLORS.length], width: 2 }))],
      },
      [x, ...series.map((s) => s.values)] as uPlot.AlignedData,
      box.current,
    );
    return () => plot.current?.destroy();
  }, [names]);
  useEffect(() => {
    plot.current?.setData([x, ...series.map((s) => s.values)] as uPlot.AlignedData);
  }, [x.length, x[x.length - 1]]);
  return <div class="chart" ref={box} role="img" aria-label={label} data-testid="chart" data-points={x.length} />;
}
