/** The configuration `svcm deploy` bakes into a bundle (the first line of every built file). */
declare const SVC_EDGE_CONFIG: Record<string, unknown>;

/** Bun's server, as far as the Bun adapter uses it. */
declare const Bun: {
  serve(options: {
    port: number;
    hostname?: string;
    fetch(request: Request, server: { requestIP(request: Request): { address: string } | null }): Promise<Response> | Response;
  }): { port: number; stop(force?: boolean): void };
  env: Record<string, string | undefined>;
};
