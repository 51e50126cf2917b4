// app/api/todos/[id]/route.ts: Next.js hands each method's function a Fetch API Request and
// sends the Response it returns, so `kit.fetch` is the whole route. Do the same in
// app/api/todos/route.ts (POST), app/sync/batch/route.ts (POST) and
// app/idempotency/[[...key]]/route.ts (GET).
import { kit } from './kit.ts'; // your kit module

export async function PATCH(request: Request): Promise<Response> {
  return kit.fetch(request);
}
