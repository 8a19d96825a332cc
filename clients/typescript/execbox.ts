// A small client for execbox's REST API (README.md, GET /openapi.json).
//
// One file with no dependencies: it needs only `fetch` (Node 22, Deno, Bun,
// browsers). Node 22 runs it as it is (type stripping); other tools compile
// it like any TypeScript. It covers sandboxes, exec (plain and streamed over
// server-sent events), background processes, files and code sessions. A
// failed call throws ExecboxError with the server's code, message, hint and
// the HTTP status.
//
// Not yet in the server, so not here either: templates and network policy.
//
//   import { Execbox } from "./execbox.ts";
//   const xb = new Execbox({ baseUrl: "http://127.0.0.1:8000", token });
//   const sbx = await xb.createSandbox();
//   console.log((await sbx.exec("echo hi")).stdout);
//   await sbx.delete();

export const DEFAULT_URL = "http://127.0.0.1:8000";

/** An error reply: code (stable, e.g. sandbox_not_found), message (the
 * server's), hint (what to do next) and status (the HTTP status: 0 with the
 * codes unreachable and connection_lost, when no reply came; 200 for an
 * error event inside a stream). */
export class ExecboxError extends Error {
        readonly code: string;
        readonly hint: string;
        readonly status: number;

        constructor(code: string, message: string, hint = "", status = 0) {
                super(message);
                this.name = "ExecboxError";
                this.code = code;
                this.hint = hint;
                this.status = status;
        }

        toString(): string {
                return `${this.name} ${this.code}: ${this.message}` + (this.hint ? ` (${this.hint})` : "");
        }
}

/** One server-sent event: its name (stdout, stderr, stream, display, error,
 * result, ...) and its JSON data. */
export interface ExecboxEvent {
        event: string;
        data: any;
}

export interface Limits {
        memory?: number | null;
        cpus?: number | null;
        pids?: number | null;
        disk?: number | null;
}

export interface SandboxInfo {
        id: string;
        state: "starting" | "running" | "stopping" | "stopped";
        limits: { memory: number; pids: number; cpus: number; disk: number };
        metadata: Record<string, unknown> | null;
        created_at_ms: number;
        expires_in_ms: number;
        timeout_s: number;
        processes: number;
}

export interface CreateSandboxOptions {
        limits?: Limits;
        env?: Record<string, string>;
        timeout_s?: number;
        mounts?: { host: string; path: string; readonly?: boolean }[];
        metadata?: Record<string, unknown>;
}

export type ExitStatus =
        | "ok" | "exit_nonzero" | "timeout" | "cpu_limit" | "memory_limit" | "output_limit" | "killed" | "running";

export interface ExecResult {
        status: ExitStatus;
        exit_code: number | null;
        signal: number | null;
        stdout: string;
        stderr: string;
        stdout_truncated: boolean;
        stderr_truncated: boolean;
        stdout_bytes: number;
        stderr_bytes: number;
        duration_ms: number;
        cpu_ms: number;
        peak_memory: number;
        pid: number;
        stdout_offset?: number;
        stderr_offset?: number;
        hint?: string;
}

export interface ExecOptions {
        cwd?: string;
        env?: Record<string, string>;
        timeout_s?: number;
        yield_after_s?: number;
        stdin?: string;
        user?: "user" | "root";
        output_limit?: number;
}

export type ProcessOptions = Omit<ExecOptions, "yield_after_s">;

export interface ProcessInfo {
        pid: number;
        cmd: string;
        running: boolean;
        status: ExitStatus;
        exit_code?: number | null;
        [key: string]: unknown;
}

export interface ProcessOutput {
        stdout: string;
        stderr: string;
        stdout_offset: number;
        stderr_offset: number;
        stdout_skipped: number;
        stderr_skipped: number;
        running: boolean;
        pid: number;
        status?: ExitStatus;
        exit_code?: number | null;
}

export interface OutputOptions {
        /** Default: where the last call ended. */
        stdout_offset?: number;
        stderr_offset?: number;
        /** Wait this long for something new. */
        wait_s?: number;
        max_bytes?: number;
}

export interface WriteResult {
        path: string;
        size: number;
        written: number;
}

export interface MkdirResult {
        path: string;
        created: boolean;
}

export interface CellImage {
        mime: string;
        bytes: Uint8Array;
        url?: string;
}

export interface FileEntry {
        name: string;
        path: string;
        type: "file" | "dir" | "symlink" | "other";
        size: number;
        mode: string;
        mtime: string;
        mtime_ms: number;
}

export interface SessionInfo {
        id: string;
        language: string;
        state: "starting" | "idle" | "busy" | "dead";
        execution_count: number;
        pid: number;
        error?: string;
}

export interface CellOutput {
        type: "stream" | "display" | "result" | "error" | "exit";
        name?: string;
        text?: string;
        data?: Record<string, any>;
        url?: string;
        execution_count?: number;
        value?: string;
        traceback?: string[];
        exit_code?: number;
        cwd?: string | null;
}

export interface RunResult {
        status: "ok" | "error" | "interrupted" | "timeout" | "running" | "dead" | "idle";
        execution_count: number;
        duration_ms?: number;
        session_id: string;
        outputs: CellOutput[];
        output_dropped_bytes?: number;
        hint?: string;
        /** bash sessions: the command's exit code and the shell's directory after. */
        exit_code?: number;
        cwd?: string | null;
}

export interface RunOptions {
        timeout_s?: number;
        yield_after_s?: number;
        output_limit?: number;
}

export interface Variable {
        name: string | null;
        type: string | null;
        repr: string;
        json: unknown;
}

export interface ClientOptions {
        /** Default: $EXECBOX_URL, else http://127.0.0.1:8000. */
        baseUrl?: string;
        /** Default: $EXECBOX_TOKEN. */
        token?: string;
        /** Another fetch (tests, proxies). */
        fetch?: typeof fetch;
}

type Query = Record<string, string | number | boolean | undefined | null>;

interface RequestOptions {
        query?: Query;
        json?: unknown;
        body?: BodyInit;
        headers?: Record<string, string>;
        signal?: AbortSignal;
}

function env(name: string): string | undefined {
        const p = (globalThis as any).process;
        return p && p.env ? p.env[name] : undefined;
}

function dropUndefined<T extends object>(o: T): Partial<T> {
        const out: any = {};
        for (const [k, v] of Object.entries(o))
                if (v !== undefined && v !== null)
                        out[k] = v;
        return out;
}

function seg(s: string | number): string {
        return encodeURIComponent(String(s));
}

async function errorFrom(resp: Response): Promise<ExecboxError> {
        const text = await resp.text().catch(() => "");
        try {
                const e = JSON.parse(text).error;
                if (e && typeof e.code === "string")
                        return new ExecboxError(e.code, String(e.message), String(e.hint ?? ""), resp.status);
        } catch {
                // not JSON: below
        }
        const t = text.trim().slice(0, 500);
        return new ExecboxError("http_error", t ? `HTTP ${resp.status}: ${t}` : `HTTP ${resp.status}`, "", resp.status);
}

/** Parse a text/event-stream body into events as they arrive. */
export async function* parseSSE(body: ReadableStream<Uint8Array>): AsyncGenerator<ExecboxEvent> {
        const reader = body.getReader();
        const decoder = new TextDecoder();
        let buf = "", name = "", data: string[] = [];
        try {
                for (;;) {
                        const { value, done } = await reader.read();
                        if (done)
                                break;
                        buf += decoder.decode(value, { stream: true });
                        let nl: number;
                        while ((nl = buf.search(/\r\n|\n|\r/)) >= 0) {
                                if (nl === buf.length - 1 && buf[nl] === "\r")
                                        break; // a CR LF cut between two chunks
                                const line = buf.slice(0, nl);
                                buf = buf.slice(buf.startsWith("\r\n", nl) ? nl + 2 : nl + 1);
                                if (line === "") {
                                        if (data.length) {
                                                const text = data.join("\n");
                                                let v: any = text;
                                                try {
                                                        v = JSON.parse(text);
                                                } catch {
                                                        // plain text data
                                                }
                                                yield { event: name || "message", data: v };
                                        }
                                        name = "";
                                        data = [];
                                } else if (!line.startsWith(":")) {
                                        const i = line.indexOf(":");
                                        const field = i < 0 ? line : line.slice(0, i);
                                        let v = i < 0 ? "" : line.slice(i + 1);
                                        if (v.startsWith(" "))
                                                v = v.slice(1);
                                        if (field === "event")
                                                name = v;
                                        else if (field === "data")
                                                data.push(v);
                                }
                        }
                }
        } finally {
                reader.releaseLock();
                await body.cancel().catch(() => {});
        }
}

/** A connection to one execbox server. */
export class Execbox {
        readonly baseUrl: string;
        readonly token: string | undefined;
        private readonly fetchFn: typeof fetch;

        constructor(opts: ClientOptions = {}) {
                this.baseUrl = (opts.baseUrl ?? env("EXECBOX_URL") ?? DEFAULT_URL).replace(/\/+$/, "");
                this.token = opts.token ?? env("EXECBOX_TOKEN");
                this.fetchFn = opts.fetch ?? fetch;
        }

        /** One HTTP exchange; throws ExecboxError on an error reply. */
        async fetch(method: string, path: string, opts: RequestOptions & { accept?: string } = {}): Promise<Response> {
                let url = /^https?:\/\//.test(path) ? path : this.baseUrl + path;
                const q = new URLSearchParams();
                for (const [k, v] of Object.entries(opts.query ?? {}))
                        if (v !== undefined && v !== null)
                                q.set(k, String(v));
                if ([...q].length)
                        url += "?" + q.toString();
                const headers: Record<string, string> = { Accept: opts.accept ?? "application/json" };
                // The token goes only to this server, not to absolute URLs elsewhere.
                if (this.token && url.startsWith(this.baseUrl + "/"))
                        headers.Authorization = `Bearer ${this.token}`;
                let body: BodyInit | undefined = opts.body;
                if (opts.json !== undefined) {
                        body = JSON.stringify(opts.json);
                        headers["Content-Type"] = "application/json";
                } else if (body !== undefined) {
                        headers["Content-Type"] = "application/octet-stream";
                }
                Object.assign(headers, opts.headers ?? {});
                let resp: Response;
                try {
                        resp = await this.fetchFn(url, { method, headers, body, signal: opts.signal });
                } catch (e: any) {
                        if (e && e.name === "AbortError")
                                throw e;
                        const code = e?.cause?.code ?? "";
                        const why = code || e?.cause?.message || e?.message || String(e);
                        if (["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ETIMEDOUT",
                             "UND_ERR_CONNECT_TIMEOUT"].includes(code))
                                throw new ExecboxError("unreachable", `cannot reach ${this.baseUrl}: ${why}`,
                                                       "is `execbox serve` running there? check the URL", 0);
                        throw new ExecboxError("connection_lost",
                                               `${method} ${url}: the connection ended without a reply: ${why}`,
                                               "retry; if it persists, the server may have refused the request " +
                                               "early (check the token, the sandbox id and the size of the body)", 0);
                }
                if (!resp.ok)
                        throw await errorFrom(resp);
                return resp;
        }

        /** One call; the decoded JSON reply (undefined for 204 No Content). */
        async request<T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
                const resp = await this.fetch(method, path, opts);
                const text = await resp.text();
                if (resp.status === 204 || !text)
                        return undefined as T;
                return JSON.parse(text) as T;
        }

        /** One call answered with server-sent events, as they arrive. */
        async *stream(method: string, path: string, opts: RequestOptions = {}): AsyncGenerator<ExecboxEvent> {
                const resp = await this.fetch(method, path, { ...opts, accept: "text/event-stream" });
                if (!(resp.headers.get("Content-Type") ?? "").includes("text/event-stream") || !resp.body) {
                        yield { event: "result", data: await resp.json() };
                        return;
                }
                yield* parseSSE(resp.body);
        }

        health(): Promise<{ status: string }> {
                return this.request("GET", "/healthz");
        }

        openapi(): Promise<any> {
                return this.request("GET", "/openapi.json");
        }

        async guide(): Promise<string> {
                return (await this.fetch("GET", "/v1/guide", { accept: "text/markdown, text/plain, */*" })).text();
        }

        tools(): Promise<any> {
                return this.request("GET", "/v1/tools");
        }

        /** A new sandbox; limits left out keep the server's defaults. */
        async createSandbox(opts: CreateSandboxOptions = {}): Promise<Sandbox> {
                const body: any = dropUndefined(opts);
                if (opts.limits) {
                        const l = opts.limits;
                        body.limits = { memory: l.memory ?? null, cpus: l.cpus ?? null, pids: l.pids ?? null,
                                        disk: l.disk ?? null };
                }
                const info = await this.request<SandboxInfo>("POST", "/v1/sandboxes", { json: body });
                return new Sandbox(this, info.id, info);
        }

        async listSandboxes(): Promise<SandboxInfo[]> {
                return (await this.request("GET", "/v1/sandboxes")).sandboxes;
        }

        /** An existing sandbox, fetched (throws sandbox_not_found). */
        async getSandbox(id: string): Promise<Sandbox> {
                const s = new Sandbox(this, id);
                await s.refresh();
                return s;
        }

        /** A handle on a sandbox by id, without a request. */
        sandbox(id: string): Sandbox {
                return new Sandbox(this, id);
        }

        async deleteSandbox(id: string): Promise<void> {
                await this.request("DELETE", `/v1/sandboxes/${seg(id)}`);
        }
}

function execBody(cmd: string | string[], opts: object): object {
        return dropUndefined({ ...(Array.isArray(cmd) ? { argv: cmd } : { cmd }), ...opts });
}

/** One sandbox. `await using` (or delete()) removes it. */
export class Sandbox {
        readonly client: Execbox;
        readonly id: string;
        readonly path: string;
        info: SandboxInfo | undefined;

        constructor(client: Execbox, id: string, info?: SandboxInfo) {
                this.client = client;
                this.id = id;
                this.info = info;
                this.path = `/v1/sandboxes/${seg(id)}`;
        }

        private req<T = any>(method: string, sub: string, opts: RequestOptions = {}): Promise<T> {
                return this.client.request<T>(method, this.path + sub, opts);
        }

        async refresh(): Promise<SandboxInfo> {
                this.info = await this.req<SandboxInfo>("GET", "");
                return this.info;
        }

        async delete(): Promise<void> {
                await this.req("DELETE", "");
        }

        async [Symbol.asyncDispose](): Promise<void> {
                try {
                        await this.delete();
                } catch (e) {
                        /* Already deleted, expired or crashed: nothing to do. */
                        if (!(e instanceof ExecboxError && (e.code === "sandbox_not_found" || e.code === "sandbox_gone")))
                                throw e;
                }
        }

        /** Restart the idle clock; timeout_s sets a new idle time to live. */
        async keepalive(timeout_s?: number): Promise<SandboxInfo> {
                this.info = await this.req<SandboxInfo>("POST", "/keepalive", { json: dropUndefined({ timeout_s }) });
                return this.info;
        }

        /** Run a command: a string goes through bash, an array runs without a shell. */
        exec(cmd: string | string[], opts: ExecOptions = {}): Promise<ExecResult> {
                return this.req<ExecResult>("POST", "/exec", { json: execBody(cmd, opts) });
        }

        /** Like exec, as events while it runs: start, stdout and stderr
         * ({data}), and last result (exec's result). An error event (the
         * command could not start) throws ExecboxError. */
        async *execStream(cmd: string | string[], opts: ExecOptions & { signal?: AbortSignal } = {}):
                AsyncGenerator<ExecboxEvent> {
                const { signal, ...rest } = opts;
                for await (const ev of this.client.stream("POST", this.path + "/exec",
                                                          { json: execBody(cmd, rest), signal })) {
                        if (ev.event === "error" && ev.data && typeof ev.data === "object")
                                throw new ExecboxError(String(ev.data.code ?? "error"), String(ev.data.message ?? ""),
                                                       String(ev.data.hint ?? ""), 200);
                        yield ev;
                }
        }

        /** Start a command in the background. */
        async startProcess(cmd: string | string[], opts: ProcessOptions = {}): Promise<Process> {
                const info = await this.req<ProcessInfo>("POST", "/processes", { json: execBody(cmd, opts) });
                return new Process(this, info.pid, info);
        }

        async listProcesses(): Promise<ProcessInfo[]> {
                return (await this.req("GET", "/processes")).processes;
        }

        /** A handle on a process by pid, without a request. */
        process(pid: number): Process {
                return new Process(this, pid);
        }

        /** The file's bytes, or a range of them. */
        async readFile(path: string, range?: { offset?: number; length?: number }): Promise<Uint8Array> {
                const headers: Record<string, string> = {};
                if (range) {
                        const start = range.offset ?? 0;
                        headers.Range = `bytes=${start}-` + (range.length ? String(start + range.length - 1) : "");
                }
                const resp = await this.client.fetch("GET", this.path + "/files",
                                                     { query: { path }, headers, accept: "application/octet-stream" });
                return new Uint8Array(await resp.arrayBuffer());
        }

        async readText(path: string): Promise<string> {
                return new TextDecoder().decode(await this.readFile(path));
        }

        /** Write (or with append, add to) a file; parents are created.
         * mode: octal permissions such as "0755". */
        writeFile(path: string, data: string | Uint8Array | Blob,
                  opts: { mode?: string; append?: boolean } = {}): Promise<WriteResult> {
                const body = typeof data === "string" ? new TextEncoder().encode(data) : data;
                return this.req("PUT", "/files", { query: { path, mode: opts.mode, append: opts.append || undefined },
                                                   body: body as BodyInit });
        }

        async listFiles(path = "/home/user", opts: { depth?: number } = {}): Promise<FileEntry[]> {
                return (await this.req("GET", "/files/list", { query: { path, depth: opts.depth } })).entries;
        }

        stat(path: string): Promise<FileEntry> {
                return this.req<FileEntry>("GET", "/files/stat", { query: { path } });
        }

        async exists(path: string): Promise<boolean> {
                try {
                        await this.stat(path);
                        return true;
                } catch (e) {
                        if (e instanceof ExecboxError && e.code === "file_not_found")
                                return false;
                        throw e;
                }
        }

        mkdir(path: string, opts: { parents?: boolean; mode?: string } = {}): Promise<MkdirResult> {
                return this.req("POST", "/files/mkdir", { json: dropUndefined({ path, ...opts }) });
        }

        move(from: string, to: string, opts: { overwrite?: boolean } = {}): Promise<{ from: string; to: string }> {
                return this.req("POST", "/files/move", { json: dropUndefined({ from, to, ...opts }) });
        }

        deleteFile(path: string, opts: { recursive?: boolean } = {}): Promise<{ path: string; deleted: number }> {
                return this.req("DELETE", "/files", { query: { path, recursive: opts.recursive || undefined } });
        }

        /** A stateful interpreter: python (the default), javascript, bash,
         * or { kernel } for an installed Jupyter kernel. */
        async createSession(language?: string, opts: { kernel?: string } = {}): Promise<Session> {
                const info = await this.req<SessionInfo>("POST", "/sessions",
                                                         { json: dropUndefined({ language, kernel: opts.kernel }) });
                return new Session(this, info.id, info);
        }

        async listSessions(): Promise<SessionInfo[]> {
                return (await this.req("GET", "/sessions")).sessions;
        }

        /** A handle on a session by id, without a request. */
        session(id: string): Session {
                return new Session(this, id);
        }

        /** An image a cell displayed, by its output's url (or file name). */
        async image(urlOrName: string): Promise<Uint8Array> {
                const target = urlOrName.includes("/") ? urlOrName : `${this.path}/images/${seg(urlOrName)}`;
                const resp = await this.client.fetch("GET", target, { accept: "image/png, image/jpeg, */*" });
                return new Uint8Array(await resp.arrayBuffer());
        }
}

/** A background process in a sandbox, by pid. */
export class Process {
        readonly sandbox: Sandbox;
        readonly pid: number;
        info: ProcessInfo | undefined;
        stdoutOffset = 0;
        stderrOffset = 0;
        private readonly sub: string;

        constructor(sandbox: Sandbox, pid: number, info?: ProcessInfo) {
                this.sandbox = sandbox;
                this.pid = pid;
                this.info = info;
                this.sub = `${sandbox.path}/processes/${seg(pid)}`;
        }

        private req<T = any>(method: string, sub: string, opts: RequestOptions = {}): Promise<T> {
                return this.sandbox.client.request<T>(method, this.sub + sub, opts);
        }

        async refresh(): Promise<ProcessInfo> {
                this.info = await this.req<ProcessInfo>("GET", "");
                return this.info;
        }

        /** Output from the given offsets on (default: where the last call
         * ended); wait_s waits that long for something new. */
        async output(opts: OutputOptions = {}): Promise<ProcessOutput> {
                const r = await this.req<ProcessOutput>("GET", "/output", { query: {
                        stdout_offset: opts.stdout_offset ?? this.stdoutOffset,
                        stderr_offset: opts.stderr_offset ?? this.stderrOffset,
                        wait_s: opts.wait_s, max_bytes: opts.max_bytes } });
                this.stdoutOffset = r.stdout_offset;
                this.stderrOffset = r.stderr_offset;
                return r;
        }

        /** Write to its stdin; eof closes stdin after. */
        write(data?: string, opts: { eof?: boolean } = {}): Promise<{ ok: boolean }> {
                return this.req("POST", "/stdin", { json: dropUndefined({ data, eof: opts.eof || undefined }) });
        }

        closeStdin(): Promise<{ ok: boolean }> {
                return this.write(undefined, { eof: true });
        }

        /** Send a signal by name (SIGTERM by default). */
        signal(signal?: string): Promise<{ ok: boolean; signal: number }> {
                return this.req("POST", "/signal", { json: dropUndefined({ signal }) });
        }

        kill(): Promise<{ ok: boolean; signal: number }> {
                return this.signal("SIGKILL");
        }

        /** Wait for it to end (or timeout_s): its result, status "running" if not. */
        wait(timeout_s?: number): Promise<ExecResult> {
                return this.req<ExecResult>("POST", "/wait", { json: dropUndefined({ timeout_s }) });
        }

        /** Kill it if it runs, and forget it. */
        async delete(): Promise<void> {
                await this.req("DELETE", "");
        }
}

/** A stateful code session in a sandbox. */
export class Session {
        readonly sandbox: Sandbox;
        readonly id: string;
        info: SessionInfo | undefined;
        private readonly sub: string;

        constructor(sandbox: Sandbox, id: string, info?: SessionInfo) {
                this.sandbox = sandbox;
                this.id = id;
                this.info = info;
                this.sub = `${sandbox.path}/sessions/${seg(id)}`;
        }

        private req<T = any>(method: string, sub: string, opts: RequestOptions = {}): Promise<T> {
                return this.sandbox.client.request<T>(method, this.sub + sub, opts);
        }

        async refresh(): Promise<SessionInfo> {
                this.info = await this.req<SessionInfo>("GET", "");
                return this.info;
        }

        /** Run a cell; its result with every output (streams, the last
         * expression, figures as base64 PNG with an images/ url, errors). */
        run(code: string, opts: RunOptions = {}): Promise<RunResult> {
                return this.req<RunResult>("POST", "/run", { json: dropUndefined({ code, ...opts }) });
        }

        /** Like run, as events while it runs: stream, display,
         * execute_result and error outputs, and last result (the status). */
        runStream(code: string, opts: RunOptions & { signal?: AbortSignal } = {}): AsyncGenerator<ExecboxEvent> {
                const { signal, ...rest } = opts;
                return this.sandbox.client.stream("POST", this.sub + "/run",
                                                  { json: dropUndefined({ code, ...rest }), signal });
        }

        /** Wait for a running cell: outputs not returned before, and its status. */
        wait(timeout_s?: number): Promise<RunResult> {
                return this.req<RunResult>("POST", "/wait", { json: dropUndefined({ timeout_s }) });
        }

        async interrupt(): Promise<SessionInfo> {
                this.info = await this.req<SessionInfo>("POST", "/interrupt");
                return this.info;
        }

        /** A fresh interpreter (all state lost). */
        async restart(): Promise<SessionInfo> {
                this.info = await this.req<SessionInfo>("POST", "/restart");
                return this.info;
        }

        /** Answer a cell that waits for input (e.g. "y\n"). */
        input(data: string): Promise<{ ok: boolean }> {
                return this.req("POST", "/input", { json: { data } });
        }

        /** A variable: name, type, repr, and json (its value, or null). */
        variable(name: string): Promise<Variable> {
                return this.req<Variable>("GET", `/variables/${seg(name)}`);
        }

        async delete(): Promise<void> {
                await this.req("DELETE", "");
        }
}

/** What a cell printed on one stream ("stdout" or "stderr"). */
export function streamText(result: RunResult, name = "stdout"): string {
        return result.outputs.filter((o) => o.type === "stream" && o.name === name).map((o) => o.text ?? "").join("");
}

/** The last expression's value as text/plain, if there was one. */
export function resultText(result: RunResult): string | undefined {
        const r = result.outputs.filter((o) => o.type === "result");
        return r.length ? r[r.length - 1].data?.["text/plain"] : undefined;
}

/** The images among a cell's outputs, decoded from their inline base64. */
export function images(result: RunResult): CellImage[] {
        const found: CellImage[] = [];
        for (const o of result.outputs)
                for (const [mime, v] of Object.entries(o.data ?? {}))
                        if (mime.startsWith("image/") && mime !== "image/svg+xml" && typeof v === "string")
                                found.push({ mime, bytes: Uint8Array.from(atob(v), (c) => c.charCodeAt(0)),
                                             url: o.url });
        return found;
}
