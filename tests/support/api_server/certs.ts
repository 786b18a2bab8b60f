/**
 * A throwaway PKI made with the `openssl` CLI: a CA, a server certificate for 127.0.0.1 and
 * localhost, a client certificate for kube-proxy, and a client certificate from an untrusted CA
 * (for the 401 case). EC P-256 keys keep it to a few milliseconds per certificate.
 */
import { KUBE_PROXY_USER } from "./auth.ts";

/** Paths and PEM text of the generated files. */
export interface TestPki {
  readonly dir: string;
  readonly caCertPath: string;
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCertPath: string;
  readonly clientKeyPath: string;
  /** Client certificate signed by the CA, CN = `clientUser`. */
  readonly clientCert: string;
  readonly clientKey: string;
  /** Client certificate signed by another CA: well-formed but not trusted (→ 401). */
  readonly untrustedClientCert: string;
  readonly untrustedClientKey: string;
}

/** Options of createTestPki. */
export interface PkiOptions {
  /** Folder to write into (created; default a new temp dir). */
  readonly dir?: string;
  /** CN of the client certificate (default "system:kube-proxy"). */
  readonly clientUser?: string;
  /** O (group) of the client certificate (default "system:node-proxier"). */
  readonly clientGroup?: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("openssl", { args, cwd, stdout: "piped", stderr: "piped" })
      .output();
  } catch (err) {
    throw new Error(
      `Cannot run "openssl" (${(err as Error).message}): run scripts/install_test_deps.sh as root`,
    );
  }
  if (out.code !== 0) {
    throw new Error(
      `"openssl ${args.join(" ")}" failed (exit ${out.code}): ${
        new TextDecoder().decode(out.stderr)
      }`,
    );
  }
}

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

async function makeCa(dir: string, name: string, cn: string): Promise<void> {
  await openssl([
    "req",
    "-x509",
    ...EC,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.crt`,
    "-days",
    "7",
    "-subj",
    `/CN=${cn}`,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ], dir); // deno-fmt-ignore
}

async function makeLeaf(
  dir: string,
  name: string,
  ca: string,
  subject: string,
  ext: string,
): Promise<void> {
  await Deno.writeTextFile(`${dir}/${name}.ext`, ext);
  await openssl([
    "req",
    "-new",
    ...EC,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    subject,
  ], dir);
  await openssl([
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${ca}.crt`,
    "-CAkey",
    `${ca}.key`,
    "-CAcreateserial",
    "-out",
    `${name}.crt`,
    "-days",
    "7",
    "-extfile",
    `${name}.ext`,
  ], dir); // deno-fmt-ignore
}

/** Generates the PKI into `opts.dir` (or a temp dir). Fails loudly without `openssl`. */
export async function createTestPki(opts: PkiOptions = {}): Promise<TestPki> {
  const dir = opts.dir ?? await Deno.makeTempDir({ prefix: "ap-pki-" });
  await Deno.mkdir(dir, { recursive: true });
  const user = opts.clientUser ?? KUBE_PROXY_USER;
  const group = opts.clientGroup ?? "system:node-proxier";
  await makeCa(dir, "ca", "deno-kube-proxy-test-ca");
  await makeCa(dir, "other-ca", "untrusted-test-ca");
  const leafBase = "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n";
  await makeLeaf(
    dir,
    "server",
    "ca",
    "/CN=kube-apiserver",
    `${leafBase}extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n`,
  );
  const clientExt = `${leafBase}extendedKeyUsage=clientAuth\n`;
  await makeLeaf(dir, "client", "ca", `/O=${group}/CN=${user}`, clientExt);
  await makeLeaf(dir, "untrusted-client", "other-ca", `/O=${group}/CN=${user}`, clientExt);
  const read = (f: string) => Deno.readTextFile(`${dir}/${f}`);
  return {
    dir,
    caCertPath: `${dir}/ca.crt`,
    caCert: await read("ca.crt"),
    serverCert: await read("server.crt"),
    serverKey: await read("server.key"),
    clientCertPath: `${dir}/client.crt`,
    clientKeyPath: `${dir}/client.key`,
    clientCert: await read("client.crt"),
    clientKey: await read("client.key"),
    untrustedClientCert: await read("untrusted-client.crt"),
    untrustedClientKey: await read("untrusted-client.key"),
  };
}
