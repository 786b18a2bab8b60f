/**
 * kubeconfig users that name a token file. client-go's field is `tokenFile` and it re-reads the
 * file (service-account tokens are rotated); client-node 2.0.1 ignores `tokenFile` and reads its
 * own `token-file` spelling once. This finds both so the loader can hand them to client-node's
 * `tokenFile` auth provider, which re-reads the file every minute as client-go does.
 */
import { dirname, isAbsolute, join } from "node:path";
import { parse } from "yaml";

/** User name → absolute token file path, for users with a token file and no inline token. */
export function tokenFileUsers(
  kubeconfigText: string,
  kubeconfigPath: string,
): Map<string, string> {
  const found = new Map<string, string>();
  let doc: unknown;
  try {
    doc = parse(kubeconfigText);
  } catch {
    return found; // client-node already reported the parse error when it loaded the file
  }
  const users = (doc as { users?: unknown } | null)?.users;
  if (!Array.isArray(users)) return found;
  for (const entry of users) {
    const name = entry?.name;
    const user = entry?.user;
    if (typeof name !== "string" || typeof user !== "object" || user === null) continue;
    if (typeof user.token === "string" && user.token !== "") continue;
    const file = user.tokenFile ?? user["token-file"];
    if (typeof file !== "string" || file === "") continue;
    found.set(name, isAbsolute(file) ? file : join(dirname(kubeconfigPath), file));
  }
  return found;
}
