// The soak's plot: RSS (with the V8 heap) and per-action p99 latency over time, drawn as an SVG
// and turned into a PNG by headless Chromium (playwright-core with Debian's /usr/bin/chromium, as
// the console tests use), so nothing is downloaded and no native chart package is needed.
import { writeFileSync } from "node:fs";
import { chromium } from "playwright-core";

export interface Series {
  name: string;
  color: string;
  points: Array<[number, number]>;
}

const W = 1000;
const PANEL_H = 300;
const PAD = { left: 70, right: 180, top: 30, bottom: 40 };

function panel(title: string, unit: string, series: Series[], top: number, log: boolean): string {
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) return "";
  const xMax = Math.max(...all.map(([x]) => x), 1);
  const ys = all.map(([, y]) => y).filter((y) => !log || y > 0);
  const yMin = log ? Math.max(1, Math.min(...ys)) : 0;
  const yMax = Math.max(...ys, yMin * 10, 1);
  const plotW = W - PAD.left - PAD.right;
  const plotH = PANEL_H - PAD.top - PAD.bottom;
  const sx = (x: number) => PAD.left + (x / xMax) * plotW;
  const sy = (y: number) => {
    const t = log ? (Math.log10(Math.max(y, yMin)) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin)) : y / yMax;
    return top + PAD.top + plotH * (1 - t);
  };
  const out: string[] = [`<text x="${PAD.left}" y="${top + 20}" font-size="15" font-weight="bold">${title}</text>`];
  const ticks = log ? [1, 10, 100, 1000, 10000, 100000].filter((v) => v >= yMin && v <= yMax) : [0, 0.25, 0.5, 0.75, 1].map((f) => f * yMax);
  for (const v of ticks) {
    out.push(`<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${sy(v)}" y2="${sy(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${PAD.left - 6}" y="${sy(v) + 4}" font-size="11" text-anchor="end">${Math.round(v)} ${unit}</text>`);
  }
  for (let m = 0; m <= xMax / 60; m += Math.max(1, Math.ceil(xMax / 60 / 10))) {
    out.push(`<text x="${sx(m * 60)}" y="${top + PANEL_H - PAD.bottom + 16}" font-size="11" text-anchor="middle">${m} min</text>`);
  }
  out.push(`<rect x="${PAD.left}" y="${top + PAD.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#888"/>`);
  series.forEach((s, i) => {
    const pts = s.points.filter(([, y]) => !log || y > 0).map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`);
    out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.join(" ")}"/>`);
    out.push(`<rect x="${W - PAD.right + 12}" y="${top + PAD.top + i * 18}" width="12" height="12" fill="${s.color}"/>`);
    out.push(`<text x="${W - PAD.right + 30}" y="${top + PAD.top + i * 18 + 10}" font-size="12">${s.name}</text>`);
  });
  return out.join("\n");
}

/** The SVG of both panels: memory (linear) and p99 latency (log scale). */
export function soakSvg(memory: Series[], latency: Series[]): string {
  const body = [panel("Memory", "MB", memory, 0, false), panel("p99 latency per action (10 s windows, log scale)", "ms", latency, PANEL_H, true)].join("\n");
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${PANEL_H * 2}" font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>${body}</svg>`;
}

/** Writes `svg` to `<base>.svg` and its rendering to `<base>.png`. */
export async function writeChart(svg: string, base: string, chromiumPath = process.env.ATRIUM_CHROMIUM ?? "/usr/bin/chromium"): Promise<void> {
  writeFileSync(`${base}.svg`, svg);
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const page = await browser.newPage({ viewport: { width: W, height: PANEL_H * 2 } });
    await page.setContent(`<html><body style="margin:0">${svg}</body></html>`);
    await page.screenshot({ path: `${base}.png`, clip: { x: 0, y: 0, width: W, height: PANEL_H * 2 } });
  } finally {
    await browser.close();
  }
}
