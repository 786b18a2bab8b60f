/**
 * Makes the test API server (listening in the root namespace) reachable at 127.0.0.1:<port>
 * inside a network namespace, where the proxy runs with net permissions for loopback only.
 * Two socat processes pass the raw TLS bytes through a unix socket (a file, so it crosses
 * namespaces): in the namespace `TCP-LISTEN:6443 → UNIX-CONNECT:sock`, in the root namespace
 * `UNIX-LISTEN:sock → TCP:127.0.0.1:<serverPort>`. While the server is stopped, connections are
 * accepted and closed at once (the client sees EOF instead of "connection refused").
 */
import { type SpawnedProcess, spawnInNamespace } from "../../../scripts/netns/mod.ts";
import { waitFor } from "../wait.ts";

/** Options of exposeInNamespace. */
export interface BridgeOptions {
  /** Real name of the network namespace (e.g. topo.nsName("node")). */
  readonly namespace: string;
  /** The server's port in the root namespace (server.port). */
  readonly serverPort: number;
  /** Folder for the unix socket, e.g. `/tmp/deno-kube-proxy/ap-x` (created). */
  readonly dir: string;
  /** Port to listen on inside the namespace (default 6443, on 127.0.0.1). */
  readonly port?: number;
}

/** A running bridge; close() it in a finally. */
export interface NamespaceBridge {
  /** "https://127.0.0.1:<port>" as seen inside the namespace. */
  readonly url: string;
  readonly socketPath: string;
  /** Stops both socat processes and removes the socket. */
  close(): Promise<void>;
}

async function run(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  const o = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { code: o.code, out: dec.decode(o.stdout) + dec.decode(o.stderr) };
}

/** Starts the bridge and waits until the namespace side listens. Needs root and socat. */
export async function exposeInNamespace(opts: BridgeOptions): Promise<NamespaceBridge> {
  const port = opts.port ?? 6443;
  await Deno.mkdir(opts.dir, { recursive: true });
  const socketPath = `${opts.dir}/apiserver.sock`;
  await Deno.remove(socketPath).catch(() => {});
  const lo = await run("ip", ["-n", opts.namespace, "link", "set", "lo", "up"]);
  if (lo.code !== 0) {
    throw new Error(`Cannot bring up lo in namespace "${opts.namespace}": ${lo.out.trim()}`);
  }
  let root: Deno.ChildProcess;
  try {
    root = new Deno.Command("socat", {
      args: [`UNIX-LISTEN:${socketPath},fork,unlink-early`, `TCP:127.0.0.1:${opts.serverPort}`],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
  } catch (err) {
    throw new Error(
      `Cannot run "socat" (${(err as Error).message}): run scripts/install_test_deps.sh as root`,
    );
  }
  let inner: SpawnedProcess | undefined;
  const close = async () => {
    await inner?.kill(500);
    try {
      root.kill("SIGTERM");
    } catch {
      // Already exited.
    }
    await root.status;
    await root.stderr.cancel().catch(() => {});
    await Deno.remove(socketPath).catch(() => {});
  };
  try {
    await waitFor(`socket "${socketPath}"`, async () => {
      try {
        return (await Deno.stat(socketPath)).isSocket === true;
      } catch {
        return false;
      }
    }, 5000);
    inner = spawnInNamespace(opts.namespace, "socat", [
      `TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr`,
      `UNIX-CONNECT:${socketPath}`,
    ], { label: `apiserver bridge in ${opts.namespace}` });
    await waitFor(`socat listening on 127.0.0.1:${port} in "${opts.namespace}"`, async () => {
      const ss = await run("ip", [
        "netns",
        "exec",
        opts.namespace,
        "ss",
        "-Hltn",
        `sport = :${port}`,
      ]);
      return ss.out.includes(`127.0.0.1:${port}`);
    }, 5000);
  } catch (err) {
    await close();
    throw err;
  }
  return { url: `https://127.0.0.1:${port}`, socketPath, close };
}
