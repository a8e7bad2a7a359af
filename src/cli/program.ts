/** What the project's command-line entry points share: program setup and how a run ends. */
import { Command, CommanderError } from 'commander';

export function newProgram(name: string, description: string): Command {
  return new Command(name)
    .description(description)
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    .showHelpAfterError(false);
}

/**
 * Parses and runs. Usage errors (commander has printed its one line) exit 2;
 * any other error is reported by `report`, which returns the exit code. On a
 * non-zero code the process exits once stdout is flushed, whatever handles
 * are still open; on success it ends by itself (a controller keeps running).
 */
export async function runProgram(program: Command, argv: string[], report: (e: unknown) => number): Promise<void> {
  let code: number;
  try {
    await program.parseAsync(argv);
    code = 0;
  } catch (e) {
    code = e instanceof CommanderError ? (e.exitCode === 0 ? 0 : 2) : report(e);
  }
  if (code !== 0) process.stdout.write('', () => process.exit(code));
}
