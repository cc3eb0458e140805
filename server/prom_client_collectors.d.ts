// prom-client's collectors one by one (lib/metrics/*.js, not typed): server/metrics.ts registers only those that work on Bun.
declare module "prom-client/lib/metrics/*" {
  const register: (registry: import("prom-client").Registry, config: object) => void;
  export default register;
}
