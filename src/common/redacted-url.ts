// Engine URLs (ATRIUM_DATABASE_URL, ATRIUM_REDIS_URL) reach error messages and logs; their
// passwords must not.

/**
 * `url` with its password replaced by "****". A string that does not parse as a URL keeps its
 * shape, so the operator sees what was typed, with anything between ':' and '@' masked.
 */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "****";
    return u.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, ":****@");
  }
}
