// piston-client (npm) against execbox's Piston API. PISTON_URL is the
// server (it sends no token: the test's server runs --no-auth), and
// PISTON_CLIENT the package's directory.
const { piston } = await import(process.env.PISTON_CLIENT + "/index.js");

const client = piston({ server: process.env.PISTON_URL });
const runtimes = await client.runtimes();
if (!Array.isArray(runtimes) || !runtimes.find((r) => r.language === "python"))
        throw new Error("runtimes: " + JSON.stringify(runtimes));
const result = await client.execute("python", "import sys\nprint(6 * 7, sys.argv[1:])");
if (!result.run || result.run.stdout !== "42 ['1', '2', '3']\n")
        throw new Error("execute: " + JSON.stringify(result));
const bad = await client.execute("cobol", "x");
if (!bad.message || !/runtime is unknown/.test(bad.message))
        throw new Error("unknown language: " + JSON.stringify(bad));
console.log("piston-client ok");
