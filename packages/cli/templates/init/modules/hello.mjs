import { defineModule, defineRoute, s } from '@trellis/core';

/**
 * A module of your own: a configuration section (`hello` in trellis.config.json), a public route
 * and a route for signed-in users. Add entities, services and jobs the same way the built-in
 * modules do (see the Trellis guide "Writing a module").
 */
export const helloModule = defineModule({
  name: 'hello',
  dependsOn: ['identity'],
  config: s.object({
    greeting: s.string().default('Hello').describe('How GET /hello greets.'),
  }),
  routes: ({ section }) => [
    defineRoute({
      method: 'GET',
      path: '/hello',
      summary: 'Say hello',
      tags: ['Hello'],
      auth: 'none',
      response: { schema: { type: 'object', properties: { message: { type: 'string' } } } },
      handler: () => ({ message: `${section.greeting}, world` }),
    }),
    defineRoute({
      method: 'GET',
      path: '/hello/me',
      summary: 'Greet the signed-in user',
      tags: ['Hello'],
      auth: ['jwt', 'api_key'],
      response: { schema: { type: 'object', properties: { message: { type: 'string' } } } },
      handler: (ctx) => ({ message: `${section.greeting}, ${ctx.requirePrincipal().user.name}` }),
    }),
  ],
});
