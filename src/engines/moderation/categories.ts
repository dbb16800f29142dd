// The 13 categories of spec 2.9, spelled as the platform spells them, and the facts about them
// every part of the engine shares: which input types each may apply to, and which category a
// subcategory belongs to.

export const CATEGORIES = [
  "harassment",
  "harassment/threatening",
  "hate",
  "hate/threatening",
  "illicit",
  "illicit/violent",
  "self-harm",
  "self-harm/instructions",
  "self-harm/intent",
  "sexual",
  "sexual/minors",
  "violence",
  "violence/graphic",
] as const;

export type Category = (typeof CATEGORIES)[number];

export const CATEGORY_COUNT = CATEGORIES.length;

/** Spec 2.9: these may apply to text or images; the others to text only. */
export const IMAGE_CAPABLE: ReadonlySet<Category> = new Set<Category>([
  "self-harm",
  "self-harm/instructions",
  "self-harm/intent",
  "sexual",
  "violence",
  "violence/graphic",
]);

/** Categories the text-moderation models do not have: their booleans are null (spec 2.9). */
export const OMNI_ONLY: ReadonlySet<Category> = new Set<Category>(["illicit", "illicit/violent"]);

export function isCategory(name: string): name is Category {
  return (CATEGORIES as readonly string[]).includes(name);
}

export const categoryIndex = (c: Category): number => CATEGORIES.indexOf(c);
