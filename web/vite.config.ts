import react from '@vitejs/plugin-react'
import { defineConfig } from 'vite'

// Run from the repository root as `vite build web`: root is web/, and the bundle goes to
// dist/web, where src/platform/http/dashboard.ts serves it.
export default defineConfig({
  plugins: [react()],
  base: '/',
  build: {
    outDir: '../dist/web',
    emptyOutDir: true,
    // No inline data: URLs for assets, so the page's CSP can stay strict.
    assetsInlineLimit: 0,
  },
  server: {
    // `npx vite web` for hot reload against a server started with `npm run dev`.
    proxy: { '/v1': 'http://127.0.0.1:3000' },
  },
})
