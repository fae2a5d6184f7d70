/** Vectors are stored as little-endian float32 bytes (the layout sqlite-vec and most stores read). */
export function vectorToBytes(vector: Float32Array): Buffer {
  const bytes = Buffer.alloc(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes;
}

const littleEndian = new Uint8Array(new Float32Array([1]).buffer)[3] === 0x3f;

export function bytesToVector(bytes: Uint8Array): Float32Array {
  // Zero-copy on little-endian machines when the bytes are 4-byte aligned; decoded otherwise.
  if (littleEndian) {
    if (bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >>> 2);
    return new Float32Array(bytes.slice().buffer, 0, bytes.byteLength >>> 2);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const vector = new Float32Array(bytes.byteLength >>> 2);
  for (let i = 0; i < vector.length; i++) vector[i] = view.getFloat32(i * 4, true);
  return vector;
}

/** Cosine distance (1 − cosine similarity); 1 when either vector is all zeros. */
export function cosineDistance(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  if (na === 0 || nb === 0) return 1;
  return 1 - dot / Math.sqrt(na * nb);
}

/** Keeps the k smallest (distance, id) pairs seen, ordered. */
export class TopK {
  readonly items: Array<{ id: string; distance: number }> = [];
  constructor(private readonly k: number) {}

  offer(id: string, distance: number): void {
    const items = this.items;
    if (items.length === this.k) {
      const last = items[items.length - 1]!;
      if (distance > last.distance || (distance === last.distance && id > last.id)) return;
      items.pop();
    }
    let index = items.length;
    while (index > 0) {
      const before = items[index - 1]!;
      if (before.distance < distance || (before.distance === distance && before.id < id)) break;
      index--;
    }
    items.splice(index, 0, { id, distance });
  }
}
