import { getEncoding } from "./encoding.js";
export async function countInputTokens(req: any, _deps: any) {
  const e = getEncoding("o200k_base");
  return { object: "response.input_tokens", input_tokens: e.countTokens(req.input[0].content) };
}
