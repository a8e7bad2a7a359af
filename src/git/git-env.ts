/**
 * How the controller runs git from the internal side: no user or system
 * configuration, no prompts or credential helpers, only the network
 * transports a canonical URL can name, the proxies of its own environment.
 */
export function gitEnvironment(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    GIT_PROTOCOL_FROM_USER: '0',
    GIT_ALLOW_PROTOCOL: 'http:https:git',
    LC_ALL: 'C',
  };
  for (const k of ['NO_PROXY', 'HTTPS_PROXY', 'HTTP_PROXY']) if (process.env[k] !== undefined) env[k] = process.env[k];
  return env;
}

/** What goes before git's own arguments: no askpass, no credential helper. */
export const GIT_SAFE_ARGS: readonly string[] = ['-c', 'core.askPass=/bin/false', '-c', 'credential.helper='];
