// clients/typescript/execbox.ts against the real server, with node --test
// (Node 22 strips the types). It starts `execbox serve` (EXECBOX) on a free
// port with a token file, and at the end stops it with SIGTERM and expects
// exit 0; tests/clients/run_node.sh checks that nothing was left behind.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:net";

import { Execbox, ExecboxError, Sandbox, images, parseSSE, resultText, streamText } from
        "../../clients/typescript/execbox.ts";

const TOKEN = "clients-test-token-ts-8e21b4";
const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
let dir, server, url, xb, sbx;

before(async () => {
        const bin = process.env.EXECBOX;
        assert.ok(bin, "set EXECBOX to the execbox binary (make clients-test)");
        dir = mkdtempSync(join(tmpdir(), "execbox-ts-client-"));
        writeFileSync(join(dir, "tokens"), TOKEN + "\n", { mode: 0o600 });
        server = spawn(bin, ["serve", "--listen", "127.0.0.1:0", "--state-dir", join(dir, "state"),
                             "--token-file", join(dir, "tokens"), "--pool", "2", "--stop-sandboxes"],
                       { stdio: ["ignore", "pipe", "inherit"] });
        url = await new Promise((resolve, reject) => {
                let out = "";
                const timer = setTimeout(() => reject(new Error(`no banner: ${out}`)), 20000);
                server.stdout.on("data", (chunk) => {
                        out += chunk;
                        const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
                        if (m) {
                                clearTimeout(timer);
                                resolve(m[1]);
                        }
                });
                server.on("exit", (code) => reject(new Error(`execbox serve exited ${code}: ${out}`)));
        });
        server.stdout.resume();
        xb = new Execbox({ baseUrl: url, token: TOKEN });
        sbx = await xb.createSandbox();
});

after(async () => {
        if (sbx)
                await sbx.delete().catch(() => {});
        if (server && server.exitCode === null) {
                const code = await new Promise((resolve) => {
                        server.removeAllListeners("exit");
                        server.on("exit", (c, sig) => resolve(c ?? sig));
                        server.kill("SIGTERM");
                });
                assert.equal(code, 0, "execbox serve did not exit 0 on SIGTERM");
        }
        if (dir)
                rmSync(dir, { recursive: true, force: true });
});

async function rejects(promise, code, status) {
        try {
                await promise;
        } catch (e) {
                assert.ok(e instanceof ExecboxError, `not an ExecboxError: ${e}`);
                assert.equal(e.code, code, String(e));
                assert.equal(e.status, status, String(e));
                assert.ok(e.message && e.hint, String(e));
                return e;
        }
        assert.fail(`expected ${code}`);
}

test("server documents and errors", async () => {
        assert.deepEqual(await xb.health(), { status: "ok" });
        assert.ok((await xb.openapi()).paths["/v1/sandboxes"]);
        assert.match(await xb.guide(), /sandbox/i);
        assert.ok((await xb.tools()).tools.some((t) => t.name === "run_command"));
        const e = await rejects(new Execbox({ baseUrl: url, token: "wrong-token-wrong-token" }).listSandboxes(),
                                "unauthorized", 401);
        assert.match(e.hint, /Bearer/);
        await rejects(xb.getSandbox("nope"), "sandbox_not_found", 404);
        const port = await new Promise((resolve) => {
                const s = createServer().listen(0, "127.0.0.1", () => {
                        const p = s.address().port;
                        s.close(() => resolve(p));
                });
        });
        await assert.rejects(new Execbox({ baseUrl: `http://127.0.0.1:${port}`, token: TOKEN }).health(),
                             (err) => err instanceof ExecboxError && err.code === "unreachable" && err.status === 0);
});

test("environment defaults", () => {
        process.env.EXECBOX_URL = url + "/";
        process.env.EXECBOX_TOKEN = TOKEN;
        try {
                const c = new Execbox();
                assert.equal(c.baseUrl, url);
                assert.equal(c.token, TOKEN);
        } finally {
                delete process.env.EXECBOX_URL;
                delete process.env.EXECBOX_TOKEN;
        }
});

test("sandbox lifecycle", async () => {
        const s = await xb.createSandbox({ limits: { memory: 256 << 20 }, env: { GREETING: "hej" }, timeout_s: 120,
                                           metadata: { owner: "ts" } });
        assert.ok(s instanceof Sandbox);
        assert.equal(s.info.limits.memory, 256 << 20);
        assert.deepEqual(s.info.metadata, { owner: "ts" });
        assert.equal((await s.exec("echo $GREETING")).stdout, "hej\n");
        assert.ok((await xb.listSandboxes()).some((x) => x.id === s.id));
        assert.equal((await xb.getSandbox(s.id)).info.id, s.id);
        assert.equal((await s.keepalive(600)).timeout_s, 600);
        await s.delete();
        await rejects(s.refresh(), "sandbox_gone", 410);
        await s[Symbol.asyncDispose]();  // already gone: not an error
        await rejects(xb.deleteSandbox(s.id), "sandbox_gone", 410);
        await rejects(xb.createSandbox({ timeout_s: -1 }), "invalid_request", 400);
});

test("exec", async () => {
        let r = await sbx.exec("echo out; echo err >&2; exit 3");
        assert.deepEqual([r.status, r.exit_code, r.stdout, r.stderr], ["exit_nonzero", 3, "out\n", "err\n"]);
        assert.equal((await sbx.exec(["printf", "%s|", "a b", "c"])).stdout, "a b|c|");
        assert.equal((await sbx.exec("tr a-z A-Z", { stdin: "shout" })).stdout, "SHOUT");
        assert.equal((await sbx.exec("pwd", { cwd: "/tmp" })).stdout, "/tmp\n");
        assert.equal((await sbx.exec("echo $X", { env: { X: "42" } })).stdout, "42\n");
        assert.equal((await sbx.exec("sleep 5", { timeout_s: 0.5 })).status, "timeout");
        r = await sbx.exec("sleep 0.6; echo late", { yield_after_s: 0.1 });
        assert.equal(r.status, "running");
        const done = await sbx.process(r.pid).wait(10);
        assert.deepEqual([done.status, done.stdout], ["ok", "late\n"]);
});

test("exec errors", async () => {
        await rejects(sbx.exec("pwd", { cwd: "/no/such/dir" }), "bad_cwd", 400);
        await rejects(xb.sandbox("nope").exec("true"), "sandbox_not_found", 404);
});

test("exec stream", async () => {
        const t0 = Date.now();
        const seen = [];
        for await (const ev of sbx.execStream("echo first; sleep 1; echo second >&2; exit 4"))
                seen.push([Date.now() - t0, ev]);
        assert.equal(seen[0][1].event, "start");
        assert.equal(seen.at(-1)[1].event, "result");
        const first = seen.find(([, ev]) => ev.event === "stdout");
        assert.ok(first[0] < 800, `stdout came only at ${first[0]} ms: not streamed`);
        assert.equal(first[1].data.data, "first\n");
        assert.equal(seen.find(([, ev]) => ev.event === "stderr")[1].data.data, "second\n");
        assert.equal(seen.at(-1)[1].data.exit_code, 4);

        await assert.rejects(async () => {
                for await (const ev of sbx.execStream(["/no/such/program"]))
                        void ev;
        }, (e) => e instanceof ExecboxError && e.code === "spawn_failed" && e.status === 200);

        for await (const ev of sbx.execStream("for i in $(seq 100); do echo $i; sleep 0.05; done"))
                if (ev.event === "stdout")
                        break;
        assert.equal((await sbx.exec("echo still fine")).stdout, "still fine\n");
});

test("SSE parser: CR LF, comments, multi-line data, split chunks", async () => {
        const text = ": hi\r\nevent: a\r\ndata: {\"x\":\r\ndata: 1}\r\n\r\ndata: plain\n\n";
        const bytes = new TextEncoder().encode(text);
        const body = new ReadableStream({
                start(c) {
                        for (const b of bytes)
                                c.enqueue(new Uint8Array([b]));
                        c.close();
                },
        });
        const evs = [];
        for await (const ev of parseSSE(body))
                evs.push(ev);
        assert.deepEqual(evs, [{ event: "a", data: { x: 1 } }, { event: "message", data: "plain" }]);
});

test("background processes", async () => {
        const p = await sbx.startProcess("for i in 1 2 3; do echo line$i; sleep 0.2; done; echo oops >&2");
        assert.ok(p.pid > 0 && p.info.running);
        assert.ok((await sbx.listProcesses()).some((x) => x.pid === p.pid));
        let got = "";
        for (const deadline = Date.now() + 10000; Date.now() < deadline;) {
                const r = await p.output({ wait_s: 1 });
                got += r.stdout;
                if (!r.running && !r.stdout)
                        break;
        }
        assert.equal(got, "line1\nline2\nline3\n");
        assert.equal(p.stdoutOffset, got.length);
        const again = await p.output({ stdout_offset: 0, stderr_offset: 0 });
        assert.deepEqual([again.stdout, again.stderr], [got, "oops\n"]);
        assert.equal((await p.output({ stdout_offset: 5 })).stdout, got.slice(5));
        assert.equal((await p.wait(5)).status, "ok");
        assert.equal((await p.refresh()).running, false);

        const cat = await sbx.startProcess(["cat"], { stdin: "hello " });
        await cat.write("world");
        await cat.closeStdin();
        assert.equal((await cat.wait(5)).stdout, "hello world");
        await rejects(cat.write("more"), "stdin_closed", 409);

        const sl = await sbx.startProcess("sleep 60");
        assert.equal((await sl.wait(0.2)).status, "running");
        assert.equal((await sl.signal("SIGTERM")).signal, 15);
        assert.equal((await sl.wait(5)).status, "killed");
        const k = await sbx.startProcess("sleep 60");
        assert.equal((await k.kill()).signal, 9);
        await k.wait(5);
        await k.delete();
        await rejects(k.refresh(), "process_not_found", 404);
});

test("files: write and read", async () => {
        assert.deepEqual(await sbx.writeFile("notes/a.txt", "héllo\n"),
                         { path: "/home/user/notes/a.txt", size: 7, written: 7 });
        assert.equal(await sbx.readText("/home/user/notes/a.txt"), "héllo\n");
        const blob = new Uint8Array(256 * 64).map((_, i) => i % 256);
        await sbx.writeFile("/tmp/blob.bin", blob);
        assert.deepEqual(await sbx.readFile("/tmp/blob.bin"), blob);
        assert.deepEqual(await sbx.readFile("/tmp/blob.bin", { offset: 10, length: 5 }), blob.slice(10, 15));
        await sbx.writeFile("blob2.bin", new Blob([blob]));
        assert.deepEqual(await sbx.readFile("blob2.bin"), blob);
        assert.equal((await sbx.writeFile("notes/a.txt", "more\n", { append: true })).size, 12);
        await sbx.writeFile("run.sh", "#!/bin/sh\necho ran\n", { mode: "0755" });
        assert.equal((await sbx.stat("run.sh")).mode, "0755");
        assert.equal((await sbx.exec("./run.sh")).stdout, "ran\n");
});

test("files: list, stat, mkdir, move, delete", async () => {
        assert.deepEqual(await sbx.mkdir("tree/a/b"), { path: "/home/user/tree/a/b", created: true });
        assert.equal((await sbx.mkdir("tree/a/b")).created, false);
        await sbx.writeFile("tree/a/b/c.txt", "c");
        await sbx.writeFile("tree/top.txt", "top");
        const names = Object.fromEntries((await sbx.listFiles("tree")).map((e) => [e.name, e]));
        assert.equal(names.a.type, "dir");
        assert.equal(names["top.txt"].size, 3);
        assert.ok((await sbx.listFiles("tree", { depth: 3 })).some((e) => e.path === "/home/user/tree/a/b/c.txt"));
        assert.ok(await sbx.exists("tree/top.txt"));
        assert.equal(await sbx.exists("tree/nope"), false);
        assert.deepEqual(await sbx.move("tree/top.txt", "tree/moved.txt"),
                         { from: "/home/user/tree/top.txt", to: "/home/user/tree/moved.txt" });
        await sbx.writeFile("tree/other.txt", "o");
        await rejects(sbx.move("tree/other.txt", "tree/moved.txt"), "already_exists", 409);
        await sbx.move("tree/other.txt", "tree/moved.txt", { overwrite: true });
        assert.equal(await sbx.readText("tree/moved.txt"), "o");
        await rejects(sbx.deleteFile("tree"), "directory_not_empty", 409);
        assert.ok((await sbx.deleteFile("tree", { recursive: true })).deleted >= 4);
        await rejects(sbx.readFile("tree/moved.txt"), "file_not_found", 404);
        await rejects(sbx.writeFile("x", "y", { mode: "999" }), "invalid_mode", 400);
});

let py;

test("python session: state, results, errors, variables", async () => {
        py = await sbx.createSession("python");
        assert.equal(py.info.language, "python");
        let r = await py.run("x = 6 * 7\nprint('printed')\nx");
        assert.deepEqual([r.status, streamText(r), resultText(r)], ["ok", "printed\n", "42"]);
        r = await py.run("1/0");
        assert.equal(r.status, "error");
        assert.equal(r.outputs.find((o) => o.type === "error").name, "ZeroDivisionError");
        assert.deepEqual(await py.variable("x"), { name: "x", type: "int", repr: "42", json: 42 });
        assert.ok((await sbx.listSessions()).some((s) => s.id === py.id));
        assert.equal((await py.refresh()).state, "idle");
});

test("python session: images", async () => {
        const r = await py.run("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()");
        const imgs = images(r);
        assert.equal(imgs.length, 1);
        assert.equal(imgs[0].mime, "image/png");
        assert.deepEqual([...imgs[0].bytes.slice(0, 8)], PNG_MAGIC);
        assert.deepEqual(await sbx.image(imgs[0].url), imgs[0].bytes);
        await rejects(sbx.image("nope.png"), "image_not_found", 404);
});

test("python session: stream", async () => {
        const names = [];
        for await (const ev of py.runStream("print('a')\nplt.plot([1]); plt.show()\n7"))
                names.push(ev.event);
        assert.equal(names[0], "stream");
        assert.ok(names.includes("display") && names.includes("execute_result"));
        assert.equal(names.at(-1), "result");
});

test("python session: wait, interrupt, restart, delete", async () => {
        let r = await py.run("import time\ntime.sleep(0.8)\nprint('woke')", { yield_after_s: 0.2 });
        assert.equal(r.status, "running");
        const w = await py.wait(10);
        assert.deepEqual([w.status, streamText(w)], ["ok", "woke\n"]);

        r = await py.run("import time\ntime.sleep(60)", { yield_after_s: 0.2 });
        assert.equal(r.status, "running");
        await py.interrupt();
        assert.equal((await py.wait(10)).status, "interrupted");
        await py.restart();
        assert.equal((await py.run("x")).status, "error");
        await rejects(py.input("x\n"), "no_input", 409);
        await py.delete();
        await rejects(py.refresh(), "session_not_found", 404);
});

test("bash and javascript sessions", async () => {
        const sh = await sbx.createSession("bash");
        let r = await sh.run("cd /tmp && echo here; false");
        assert.deepEqual([streamText(r), r.exit_code, r.cwd], ["here\n", 1, "/tmp"]);
        r = await sh.run("read -p 'name? ' n; echo hi $n", { yield_after_s: 0.3 });
        assert.equal(r.status, "running");
        assert.deepEqual(await sh.input("bob\n"), { ok: true });
        assert.ok(streamText(await sh.wait(10)).includes("hi bob\n"));

        const js = await sbx.createSession("javascript");
        assert.equal(resultText(await js.run("let a = 20; a + 1")), "21");
        await rejects(sbx.createSession("cobol"), "unknown_language", 400);
});
