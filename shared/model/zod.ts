/**
 * What the browser bundles use of zod: the tree-shakable `zod/mini` form, by name. Import it as a
 * namespace (`import * as z`) and reach members statically (`z.string()`): a bundler then keeps
 * only the schema kinds a schema calls, so an unused one here costs nothing, while zod's own
 * namespace or full API would add its every kind (and the full API every locale) to each worker.
 */
export {
  boolean,
  custom,
  looseObject,
  nullable,
  number,
  optional,
  strictObject,
  string,
} from 'zod/mini';
