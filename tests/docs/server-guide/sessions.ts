/**
 * The guide's stand-in for an app's own session check (docs/server.md): the snippets call it as
 * they would call yours. Not quoted in the guide.
 */
export const sessions = {
  /** The signed-in user of a request, if any. */
  async verify(request: Request): Promise<{ userId: string } | undefined> {
    const token = /^Bearer (\S+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
    return token ? { userId: token } : undefined;
  },
};
