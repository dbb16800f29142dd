/**
 * Runs `fn` on a client-streaming call's request messages and ends the request stream however
 * `fn` went: a multipart body's unread rest is drained, an RPC stream is let go. The end is not
 * awaited: a read may still be pending while the error is already known.
 */
export async function withClientStream<T, R>(requests: AsyncIterable<T>, fn: (it: AsyncIterator<T>) => Promise<R>): Promise<R> {
  const it = requests[Symbol.asyncIterator]();
  try {
    return await fn(it);
  } finally {
    it.return?.(undefined).catch(() => {});
  }
}
