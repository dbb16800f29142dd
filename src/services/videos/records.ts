// The videos area's record kinds and row types, private to src/services/videos/.

export const VIDEO_KIND = "video";
export const CHARACTER_KIND = "video_character";

export type VideoStatus = "queued" | "in_progress" | "completed" | "failed";
export type VideoVariant = "video" | "thumbnail" | "spritesheet";

export interface VideoRecord {
  id: string;
  model: string;
  prompt: string;
  /** The clip's length as the spec writes it; for an extension the stitched total. */
  seconds: string;
  size: string;
  createdAt: number;
  status: VideoStatus;
  progress: number;
  completedAt: number | null;
  expiresAt: number | null;
  error: { code: string; message: string } | null;
  remixedFromVideoId: string | null;
  /** Remix, edit or extension: what it starts from (an extension adds `segmentSeconds`). */
  source: { kind: "remix" | "edit" | "extension"; videoId: string; segmentSeconds: string | null } | null;
  /** The reference image is stored as `<id>.input`. */
  hasInputReference: boolean;
  characterIds: string[];
  /** Wall-clock ms when rendering started (for the poll interval hint). */
  startedAtMs: number | null;
  /** Bytes of each asset once stored. */
  assets: Record<VideoVariant, number> | null;
  /** The assets are gone (expired); the record stays. */
  assetsExpired: boolean;
  /** Which provider rendered it, and its id there (an upstream's video id, for remixing it there). */
  rendered: { provider: string; renderId: string } | null;
}

export interface CharacterRecord {
  id: string;
  name: string;
  createdAt: number;
  /** Bytes of the normalised reference clip, stored as `<id>.clip`. */
  clipBytes: number;
}
