// Module resolution hook (node:module register): a bare import ("ai", "zod") from anywhere is
// resolved as if it were made from this folder, so the drivers beside their Python adapters
// (adapters/<sdk>/driver.mjs) use the one locked node_modules here.
const ROOT = new URL("./package.json", import.meta.url).href;

function bare(specifier) {
  return !/^(?:[a-z][a-z0-9+.-]*:|\.{0,2}\/)/i.test(specifier);
}

export async function resolve(specifier, context, nextResolve) {
  if (bare(specifier) && !specifier.startsWith("node:")) {
    return nextResolve(specifier, { ...context, parentURL: ROOT });
  }
  return nextResolve(specifier, context);
}
