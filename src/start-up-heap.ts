// Imported by main.ts before any other module is loaded or parsed. Start-up allocates tens of MB of
// objects that live for the whole process (modules, schemas, routes); V8 answers the survivors by
// growing the young generation to its 2 × 16 MiB maximum, which then stays committed while the
// server idles (~25 MB of RSS). Holding the young generation at its initial size until the server
// is ready keeps those pages unused; `youngGenerationGrows()` lets it grow again under load.
import v8 from "node:v8";

/** V8's default (src/flags/flag-definitions.h: semi_space_growth_factor). */
const DEFAULT_GROWTH_FACTOR = 2;

/** A young-generation flag given on the command line or in NODE_OPTIONS is the operator's: left alone. */
const operatorSet = /--(max-)?semi[-_]space/.test(`${process.execArgv.join(" ")} ${process.env.NODE_OPTIONS ?? ""}`);

if (!operatorSet) v8.setFlagsFromString("--semi-space-growth-factor=1");

/** Called once the server is ready: from here the young generation grows as V8 sees fit. */
export function youngGenerationGrows(): void {
  if (!operatorSet) v8.setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`);
}
