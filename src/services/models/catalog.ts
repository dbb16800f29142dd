// The built-in model catalog: the models the spec and its references name. Fine-tuned models
// (ft:<base>:<org>:<suffix>:<id>) are per-project records added by fine-tuning.
export interface CatalogModel {
  id: string;
  created: number;
  ownedBy: string;
  shutdownDate: string | null;
  /** What the model does; other modules (token counting, moderation, video) select by it. */
  family: "chat" | "reasoning" | "embedding" | "moderation" | "video";
}

const m = (id: string, created: number, family: CatalogModel["family"], shutdownDate: string | null = null): CatalogModel => ({
  id,
  created,
  ownedBy: "system",
  shutdownDate,
  family,
});

export const BUILTIN_MODELS: readonly CatalogModel[] = [
  m("gpt-5", 1754425777, "reasoning"),
  m("gpt-5-mini", 1754425928, "reasoning"),
  m("gpt-5-nano", 1754426384, "reasoning"),
  m("gpt-4.1", 1744316542, "chat"),
  m("gpt-4.1-mini", 1744318173, "chat"),
  m("gpt-4.1-nano", 1744321707, "chat"),
  m("gpt-4.5-preview", 1740623059, "chat", "2025-07-14"),
  m("gpt-4o", 1715367049, "chat"),
  m("gpt-4o-2024-08-06", 1722814719, "chat"),
  m("gpt-4o-mini", 1721172741, "chat"),
  m("gpt-4-turbo", 1712361441, "chat"),
  m("gpt-4", 1687882411, "chat"),
  m("gpt-4-0613", 1686588896, "chat"),
  m("gpt-3.5-turbo", 1677610602, "chat"),
  m("gpt-3.5-turbo-0125", 1706048358, "chat"),
  m("o1", 1734375816, "reasoning"),
  m("o3", 1744225308, "reasoning"),
  m("o3-mini", 1737146383, "reasoning"),
  m("o4-mini", 1744225351, "reasoning"),
  m("text-embedding-3-small", 1705948997, "embedding"),
  m("text-embedding-3-large", 1705953180, "embedding"),
  m("text-embedding-ada-002", 1671217299, "embedding"),
  // Served by this server's local models (src/engines/embeddings: the sentence encoder and the static
  // model distilled from it), hence owned_by "atrium".
  { ...m("atrium-embed-use-lite", 1735689600, "embedding"), ownedBy: "atrium" },
  { ...m("atrium-embed-static-use-lite", 1764115200, "embedding"), ownedBy: "atrium" },
  m("omni-moderation-latest", 1731689265, "moderation"),
  m("omni-moderation-2024-09-26", 1732734466, "moderation"),
  m("text-moderation-latest", 1698800000, "moderation"),
  m("text-moderation-stable", 1698800000, "moderation"),
  m("vid-2", 1759708800, "video"),
  m("vid-2-pro", 1759708800, "video"),
  m("vid-2-2025-10-06", 1759708800, "video"),
  m("vid-2-pro-2025-10-06", 1759708800, "video"),
  m("vid-2-2025-12-08", 1765152000, "video"),
];

const byId = new Map(BUILTIN_MODELS.map((x) => [x.id, x]));

export function builtinModel(id: string): CatalogModel | undefined {
  return byId.get(id);
}

/** The base model of a fine-tuned model id ("ft:gpt-4o-mini:org:suffix:id" → "gpt-4o-mini"). */
export function fineTunedBase(id: string): string | undefined {
  if (!id.startsWith("ft:")) return undefined;
  return id.split(":")[1] || undefined;
}
