import react from '@vitejs/plugin-react';
import { defineConfig, loadEnv } from 'vite';
import { VitePWA } from 'vite-plugin-pwa';

export default defineConfig(({ mode }) => {
  // The todo API (examples/hono-sqlite); `API_URL=http://127.0.0.1:3001 npm run dev` for another.
  const { API_URL = 'http://127.0.0.1:3000' } = loadEnv(mode, '.', 'API_');
  return {
    plugins: [
      react(),
      VitePWA({
        strategies: 'injectManifest',
        srcDir: 'src',
        filename: 'sw.ts',
        injectRegister: false,
        manifest: {
          name: 'Todos',
          short_name: 'Todos',
          start_url: '/',
          display: 'standalone',
          theme_color: '#2f5d8a',
          icons: [{ src: '/icon.svg', sizes: 'any', type: 'image/svg+xml' }],
        },
        injectManifest: {
          rollupFormat: 'iife',
          globPatterns: ['**/*.{js,css,html,svg,webmanifest}'],
        },
        devOptions: { enabled: true, type: 'module', navigateFallback: 'index.html' },
      }),
    ],
    // `vite dev` and `vite preview` (npm start) alike: the page and its worker call /api on
    // their own origin, and Vite passes it on to the API.
    server: { proxy: { '/api': API_URL } },
    preview: { proxy: { '/api': API_URL } },
  };
});
