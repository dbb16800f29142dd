// ffmpeg's drawtext needs a font file (`fontfile=`); none ships with npm's ffmpeg, and none is
// guaranteed on a machine. Looked up once: an explicit path, then fontconfig, then the usual
// places. Without one the renderer leaves the prompt's text out (shapes and colours still follow
// the prompt), and says so once in the log.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const COMMON_FONTS = [
  "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
  "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
  "/usr/share/fonts/dejavu/DejaVuSans-Bold.ttf",
  "/usr/share/fonts/dejavu/DejaVuSans.ttf",
  "/usr/share/fonts/TTF/DejaVuSans-Bold.ttf",
  "/usr/share/fonts/TTF/DejaVuSans.ttf",
  "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf",
  "/usr/share/fonts/truetype/freefont/FreeSansBold.ttf",
  "/usr/share/fonts/noto/NotoSans-Regular.ttf",
  "/Library/Fonts/Arial.ttf",
  "/System/Library/Fonts/Supplemental/Arial.ttf",
  "C:\\Windows\\Fonts\\arial.ttf",
];

/** A TrueType/OpenType font file for drawtext, or undefined when this machine has none. */
export function findFont(explicit?: string): string | undefined {
  if (explicit) return existsSync(explicit) ? explicit : undefined;
  try {
    const r = spawnSync("fc-match", ["-f", "%{file}", "sans-serif:style=Bold"], { encoding: "utf8", timeout: 2000 });
    const file = r.status === 0 ? r.stdout.trim() : "";
    if (file && /\.(ttf|otf|ttc)$/i.test(file) && existsSync(file)) return file;
  } catch {
    // no fontconfig: try the usual places
  }
  return COMMON_FONTS.find((f) => existsSync(f));
}
