// Vite builds the dashboard into dist/, which the service serves at /.
// `npm run dev` serves it with hot reload and forwards /api to CLADE_SERVICE_URL.
import { defineConfig, loadEnv } from "vite";

export default defineConfig(({ mode }) => {
  const env = loadEnv(mode, ".", "CLADE_");
  return {
    base: "/",
    build: { outDir: "dist", emptyOutDir: true, sourcemap: true, target: "es2022" },
    server: {
      proxy: { "/api": { target: env.CLADE_SERVICE_URL ?? "http://127.0.0.1:8420", changeOrigin: false } },
    },
  };
});
