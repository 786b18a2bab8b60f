/** deno-kube-proxy: wiring only. Parses the command line and runs the chosen command. */
import { CommandFailure } from "./lib/app/command_failure.ts";
import { cleanupCommand, renderCommand, writeConfigCommand } from "./lib/app/commands.ts";
import { initOnlyCommand } from "./lib/app/init_command.ts";
import { runCommand } from "./lib/app/run_command.ts";
import { MODE_CONFIG_SECTIONS } from "./lib/backends/mod.ts";
import { ConfigError, helpText, parseCommandLine, VERSION } from "./lib/config/mod.ts";
import { denoCommandRunner } from "./lib/exec/mod.ts";
import { createLogger } from "./lib/log/mod.ts";

async function main(args: string[]): Promise<number> {
  let cl;
  try {
    cl = parseCommandLine(args, { modeSections: MODE_CONFIG_SECTIONS });
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return 1;
    }
    throw err;
  }
  const { config } = cl;
  const logger = createLogger({
    format: config.logging.format,
    verbosity: config.logging.verbosity,
  });
  try {
    switch (cl.command) {
      case "help":
        console.log(helpText({ modeSections: MODE_CONFIG_SECTIONS }));
        return 0;
      case "version":
        console.log(`deno-kube-proxy ${VERSION}`);
        return 0;
      case "write-config":
        await writeConfigCommand(config, cl.writeConfigTo, logger);
        return 0;
      case "cleanup":
        await cleanupCommand(denoCommandRunner, logger);
        return 0;
      case "init-only":
        await initOnlyCommand(config, denoCommandRunner, logger);
        return 0;
      case "render":
        await Deno.stdout.write(new TextEncoder().encode(await renderCommand(config, logger)));
        return 0;
      case "trace": {
        // Loaded only here: the tracers of every mode are no part of a running proxy.
        const { traceCommand } = await import("./lib/app/trace_command.ts");
        const outcome = await traceCommand(config, cl.trace!, {
          runner: denoCommandRunner,
          logger,
        });
        await Deno.stdout.write(new TextEncoder().encode(outcome.text));
        return outcome.code;
      }
      case "run": {
        const abort = new AbortController();
        for (const sig of ["SIGTERM", "SIGINT"] as const) {
          Deno.addSignalListener(sig, () => {
            logger.info("Received signal, shutting down", { signal: sig });
            abort.abort();
          });
        }
        await runCommand(config, denoCommandRunner, logger, abort.signal, {
          configFile: cl.configFile,
        });
        return 0;
      }
    }
  } catch (err) {
    if (err instanceof CommandFailure) {
      logger.error(err.message);
      return err.code;
    }
    logger.error("Fatal error", { err });
    return 2;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
