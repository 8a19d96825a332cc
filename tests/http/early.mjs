// Node fetch (undici) sends a 16 MiB upload that the server refuses at its
// headers, and must read the error and its hint, not ECONNRESET.
// usage: node early.mjs URL TOKEN SANDBOX_ID STATUS...  (see run.sh)
const [url, token, sid] = process.argv.slice(2);
const big = new Uint8Array(16 << 20);
const cases = [
  ["wrong token", `/v1/sandboxes/${sid}/files?path=/tmp/up`, "wrong-token-0123456789", 401, "unauthorized"],
  ["unknown sandbox", "/v1/sandboxes/aaaaaaaaaaaaaaaaaaaaaaaa/files?path=/tmp/up", token, 404, "sandbox_not_found"],
  ["unknown path", "/v1/nowhere", token, 404, "not_found"],
];
if (process.env.TOO_LARGE)
  cases.splice(0, cases.length, ["too large", `/v1/sandboxes/${sid}/files?path=/tmp/up`, token, 413, "body_too_large"]);
let failed = 0;
for (const [name, path, tok, status, code] of cases) {
  try {
    const r = await fetch(url + path, { method: "PUT", body: big, headers: { Authorization: `Bearer ${tok}` } });
    const j = await r.json();
    if (r.status !== status || j.error.code !== code || !j.error.hint) throw new Error(`${r.status} ${JSON.stringify(j)}`);
    console.log(`ok: ${name}: ${r.status} ${j.error.code}`);
  } catch (e) {
    failed++;
    console.error(`FAILED: ${name}: ${e.cause ? e.cause.code || e.cause : e}`);
  }
}
process.exit(failed ? 1 : 0);
