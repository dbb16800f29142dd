// The process entry (`node dist/src/main.js`). An ES module graph is fetched and parsed whole
// before any of its modules runs, and parsing Atrium's graph is much of start-up's allocation. The
// young-generation setting of start-up-heap.ts must be in force while that happens, so this file
// imports it alone and loads the rest (cli.ts) dynamically: as the first static import of the
// graph it would run only after the parse, once the young generation had grown (~10 MB more RSS).
import "./start-up-heap.js";

await import("./cli.js");
