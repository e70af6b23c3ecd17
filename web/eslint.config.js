// ESLint for the dashboard: the recommended and type-aware rules of typescript-eslint;
// formatting is Prettier's business (eslint-config-prettier turns the overlapping rules off).
import js from "@eslint/js";
import prettier from "eslint-config-prettier";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "src/api/schema.d.ts"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.browser,
      parserOptions: {
        projectService: { allowDefaultProject: ["vite.config.ts"] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // `const { a: _a, ...rest } = x` is how a key is left out of a copy.
      "@typescript-eslint/no-unused-vars": ["error", { ignoreRestSiblings: true }],
    },
  },
  { files: ["*.js"], extends: [tseslint.configs.disableTypeChecked], languageOptions: { globals: globals.node } },
  // Plain scripts the page loads as they are (public/ is copied into dist untouched).
  {
    files: ["public/**/*.js"],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: globals.browser, sourceType: "script" },
  },
  prettier,
);
