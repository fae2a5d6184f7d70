/**
 * Reproducible test vectors: Gaussian components from a linear congruential generator started at
 * `seed`, and UUID-shaped ids numbered from 1 (both sequences go on from call to call).
 */
export function seededVectors(seed: number, dimension: number): { vector: () => Float32Array; newId: () => string } {
  let state = seed;
  const random = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  const gaussian = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
  let serial = 0;
  return {
    vector: () => Float32Array.from({ length: dimension }, gaussian),
    newId: () => `00000000-0000-7000-9000-${String(++serial).padStart(12, '0')}`,
  };
}
