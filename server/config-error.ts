/** A command line or start option that cannot be run; the CLI prints it with the usage. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'invalid_config';
}
