// ESLint with typescript-eslint's recommended rules: what the compiler lets through (dead code, imports nothing
// uses, pointless escapes). Layout is Prettier's (.prettierrc.json), layering dependency-cruiser's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config({ ignores: ['dist/**', 'node_modules/**', '.tap/**'] }, js.configs.recommended, ...tseslint.configs.recommended, {
  rules: {
    // Objects arrive as parsed JSON of any kind; rules and views walk them as `any` on purpose (the kinds are many
    // and the fast paths avoid building types per kind).
    '@typescript-eslint/no-explicit-any': 'off',
    // `_name` keeps a field out of a rest object or a parameter's place: meant, not forgotten.
    '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
  },
});
