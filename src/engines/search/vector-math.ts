/** The dot product of `dim` floats of `a` from `aOff` and of `b` from `bOff`. */
export function dotAt(a: Float32Array, aOff: number, b: Float32Array, bOff: number, dim: number): number {
  // Four accumulators: measurably faster in V8 than one.
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  let j = 0;
  for (; j + 3 < dim; j += 4) {
    s0 += a[aOff + j]! * b[bOff + j]!;
    s1 += a[aOff + j + 1]! * b[bOff + j + 1]!;
    s2 += a[aOff + j + 2]! * b[bOff + j + 2]!;
    s3 += a[aOff + j + 3]! * b[bOff + j + 3]!;
  }
  for (; j < dim; j++) s0 += a[aOff + j]! * b[bOff + j]!;
  return s0 + s1 + s2 + s3;
}
