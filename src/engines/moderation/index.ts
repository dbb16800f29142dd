/**
 * The local moderation engine (no HTTP): a nearest-example text classifier over the local
 * sentence encoder plus a lexicon, calibrated on its own example bank, and nsfwjs for images.
 * See README.md beside this file.
 */
export { CATEGORIES, IMAGE_CAPABLE, OMNI_ONLY, isCategory, type Category } from "./categories.js";
export { DEFAULT_MODERATION_MODEL, LIMITS, MODERATION_MODELS, ModerationInputError, isTextOnlyModel, parseModel, parseModerationInput, type ModerationItem, type ModerationModel } from "./input.js";
export { IMAGE_SEXUAL_THRESHOLD, LOCAL_MODERATION_ID, LocalModeration, LocalModerationTimeout, buildResult, type LocalModerationOptions } from "./provider.js";
export { parseExamples, normalizeExample, countBySection, type Example } from "./examples.js";
export { BANK, BANK_SOURCE } from "./bank/index.js";
