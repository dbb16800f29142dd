// Test fixtures shared by the token-counting tests: minimal image headers of a given size, a
// minimal PDF, and the OpenAI cookbook's worked-example conversation.

export function be32(n: number): number[] {
  return [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
}
export function le16(n: number): number[] {
  return [n & 255, (n >>> 8) & 255];
}
export function le24(n: number): number[] {
  return [n & 255, (n >>> 8) & 255, (n >>> 16) & 255];
}
export const bytes = (...parts: (number[] | string)[]) =>
  new Uint8Array(parts.flatMap((p) => (typeof p === "string" ? [...Buffer.from(p, "latin1")] : p)));

/** PNG header: signature, IHDR, IEND (no pixel data: only the header is read). */
export function png(w: number, h: number): Uint8Array {
  return bytes([0x89], "PNG\r\n\x1a\n", be32(13), "IHDR", be32(w), be32(h), [8, 2, 0, 0, 0], [0, 0, 0, 0], be32(0), "IEND", [0xae, 0x42, 0x60, 0x82]);
}
/** JPEG: SOI, APP0 (JFIF), SOF0 with the size, EOI. */
export function jpeg(w: number, h: number): Uint8Array {
  return bytes([0xff, 0xd8, 0xff, 0xe0, 0, 16], "JFIF\0", [1, 1, 0, 0, 1, 0, 1, 0, 0], [0xff, 0xc0, 0, 17, 8], [h >> 8, h & 255, w >> 8, w & 255], [3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1], [0xff, 0xd9]);
}
export function gif(w: number, h: number): Uint8Array {
  return bytes("GIF89a", le16(w), le16(h), [0, 0, 0], ";");
}
export function webpVp8x(w: number, h: number): Uint8Array {
  return bytes("RIFF", [22, 0, 0, 0], "WEBP", "VP8X", [10, 0, 0, 0], [0, 0, 0, 0], le24(w - 1), le24(h - 1), [0, 0]);
}
export function webpVp8l(w: number, h: number): Uint8Array {
  const v = (w - 1) | ((h - 1) << 14);
  return bytes("RIFF", [26, 0, 0, 0], "WEBP", "VP8L", [5, 0, 0, 0], [0x2f, v & 255, (v >>> 8) & 255, (v >>> 16) & 255, (v >>> 24) & 255], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
}
export function webpVp8(w: number, h: number): Uint8Array {
  return bytes("RIFF", [26, 0, 0, 0], "WEBP", "VP8 ", [10, 0, 0, 0], [0, 0, 0], [0x9d, 0x01, 0x2a], le16(w), le16(h), [0, 0, 0, 0]);
}
export const dataUrl = (b: Uint8Array, mime = "image/png") => `data:${mime};base64,${Buffer.from(b).toString("base64")}`;

/** A minimal valid PDF: one Helvetica text line per page, MediaBox w×h points. */
export function pdf(pages: { w: number; h: number; text: string; rotate?: number }[]): Uint8Array {
  const objs: string[] = [];
  objs[1] = "<< /Type /Catalog /Pages 2 0 R >>";
  objs[2] = `<< /Type /Pages /Kids [${pages.map((_, i) => `${4 + i * 2} 0 R`).join(" ")}] /Count ${pages.length} >>`;
  objs[3] = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>";
  pages.forEach((p, i) => {
    const stream = `BT /F1 12 Tf 72 ${p.h - 72} Td (${p.text}) Tj ET`;
    objs[4 + i * 2] = `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${p.w} ${p.h}]${p.rotate ? ` /Rotate ${p.rotate}` : ""} /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + i * 2} 0 R >>`;
    objs[5 + i * 2] = `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`;
  });
  let out = "%PDF-1.4\n";
  const offsets: number[] = [];
  for (let k = 1; k < objs.length; k++) {
    offsets[k] = out.length;
    out += `${k} 0 obj\n${objs[k]}\nendobj\n`;
  }
  const xref = out.length;
  out += `xref\n0 ${objs.length}\n0000000000 65535 f \n${offsets.slice(1).map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")}`;
  out += `trailer\n<< /Size ${objs.length} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return new Uint8Array(Buffer.from(out, "latin1"));
}

// OpenAI cookbook, "How to count tokens with tiktoken", section 6: this conversation is 129 prompt
// tokens on gpt-4 / gpt-3.5-turbo and 124 on gpt-4o / gpt-4o-mini (names included).
export const COOKBOOK_MESSAGES = [
  { role: "system", content: "You are a helpful, pattern-following assistant that translates corporate jargon into plain English." },
  { role: "system", name: "example_user", content: "New synergies will help drive top-line growth." },
  { role: "system", name: "example_assistant", content: "Things working well together will increase revenue." },
  { role: "system", name: "example_user", content: "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage." },
  { role: "system", name: "example_assistant", content: "Let's talk later when we're less busy about how to do better." },
  { role: "user", content: "This late pivot means we don't have time to boil the ocean for the client deliverable." },
];


// Same cookbook, section 7 (num_tokens_for_tools): this function with these messages is 101 tokens
// on gpt-4o / gpt-4o-mini and 105 on gpt-4 / gpt-3.5-turbo.
export const WEATHER_FUNCTION = {
  name: "get_current_weather",
  description: "Get the current weather in a given location",
  parameters: {
    type: "object",
    properties: {
      location: { type: "string", description: "The city and state, e.g. San Francisco, CA" },
      unit: { type: "string", description: "The unit of temperature to return", enum: ["celsius", "fahrenheit"] },
    },
    required: ["location"],
  },
};
export const WEATHER_MESSAGES = [
  { role: "system", content: "You are a helpful assistant that can answer to questions about the weather." },
  { role: "user", content: "What's the weather like in San Francisco?" },
];
