// The part of autocannon's programmatic API bench/load-worker.ts uses (the package ships no types).
declare module "autocannon" {
  namespace autocannon {
    interface Options {
      url: string;
      method?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      connections?: number;
      pipelining?: number;
      duration?: number;
    }
    interface Result {
      requests: { total: number; average: number };
      duration: number;
      non2xx: number;
      errors: number;
      timeouts: number;
    }
  }
  function autocannon(opts: autocannon.Options): Promise<autocannon.Result>;
  export default autocannon;
}
