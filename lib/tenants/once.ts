// A value every tenant's work needs of the upstream (its built-in roles, the shared RBAC applied), got once and
// shared by all who ask; got again after a failure, or when forgotten because the upstream changed it.

export class Once<T> {
  readonly #get: () => Promise<T>;
  #value: Promise<T> | null = null;

  constructor(get: () => Promise<T>) {
    this.#get = get;
  }

  get(): Promise<T> {
    this.#value ??= this.#get().catch((error: unknown) => {
      this.#value = null;
      throw error;
    });
    return this.#value;
  }

  forget(): void {
    this.#value = null;
  }
}
