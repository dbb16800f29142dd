// The classifier's example bank: the labelled sentences it compares texts with (and calibrates
// on). Kept apart from the evaluation set in bench/data/moderation/.
import { parseExamples, type Example } from "../examples.js";
import { BENIGN_EXAMPLES } from "./benign.js";
import { HARMFUL_EXAMPLES } from "./harmful.js";

export const BANK_SOURCE = `${HARMFUL_EXAMPLES}\n${BENIGN_EXAMPLES}`;

export const BANK: readonly Example[] = parseExamples(BANK_SOURCE, "moderation bank");
