/** Whether `url` is a worker URL the client can use, and whether it is TLS. */
export function parseWsUrl(url: string): { tls: boolean } | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== "ws:" && parsed.protocol !== "wss:") return undefined;
  if (parsed.hostname === "" || parsed.username !== "" || parsed.password !== "") return undefined;
  return { tls: parsed.protocol === "wss:" };
}
