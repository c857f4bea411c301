// Decoding RolloutTokens' logprob arrays (rollouts.ts). A module of its own, importing nothing,
// so a browser bundle of it (the web console) carries no schema or TypeBox code.

/** The float32 logprobs of RolloutTokens (little-endian, base64), as numbers. Uses `atob`, so a
 * browser can decode them too. */
export function decodeLogprobs(base64: string): Float32Array {
  const binary = atob(base64);
  const view = new DataView(new ArrayBuffer(binary.length));
  for (let i = 0; i < binary.length; i++) view.setUint8(i, binary.charCodeAt(i));
  const out = new Float32Array(Math.floor(binary.length / 4));
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}
