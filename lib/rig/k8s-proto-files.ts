// Reads Kubernetes' generated.proto files (and the Go struct tags beside them) from the rig's Go module cache: the
// source of truth for field numbers. Build and test tooling only: never imported by the server, which has no Go.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

/** The Kubernetes module version whose .proto files the rig is built from (FACTS.md: v1.36.3). */
export const K8S_MODULE_VERSION = 'v0.36.3';

export interface ProtoField {
  readonly name: string;
  readonly number: number;
  /** A scalar type (string, int32, bool, bytes...) or a message's full name. */
  readonly type: string;
  readonly repeated: boolean;
  /** map<string, V>: the value type. */
  readonly mapValue?: string;
}

export type ProtoMessages = ReadonlyMap<string, ReadonlyMap<string, ProtoField>>;

/** One generated.proto file: its package, the files it imports (module-cache paths) and its messages. */
export interface ProtoFile {
  readonly path: string;
  readonly pkg: string;
  readonly imports: readonly string[];
  readonly messages: ReadonlyMap<string, ReadonlyMap<string, ProtoField>>;
}

/** The Go module cache the rig was built with, or undefined when it is not on this machine. */
export function goModuleCache(): string | undefined {
  let dir: string | undefined;
  for (const go of ['go', '/usr/local/go/bin/go']) {
    try {
      dir = execFileSync(go, ['env', 'GOMODCACHE'], { encoding: 'utf8', timeout: 20_000 }).trim();
      break;
    } catch {
      dir = join(homedir(), 'go', 'pkg', 'mod');
    }
  }
  const probe = `k8s.io/apimachinery@${K8S_MODULE_VERSION}/pkg/apis/meta/v1/generated.proto`;
  return dir !== undefined && dir !== '' && existsSync(join(dir, probe)) ? dir : undefined;
}

const SCALARS = new Set(['string', 'bytes', 'bool', 'int32', 'int64', 'uint32', 'uint64', 'double', 'float', 'sint32', 'sint64']);

/** `k8s.io/api/core/v1/generated.proto` (an import) as its path in the module cache. */
export function moduleCachePath(importPath: string): string {
  const match = /^k8s\.io\/([\w-]+)\/(.*)$/.exec(importPath);
  if (match === null) throw new Error(`k8s-proto: an import outside k8s.io: ${importPath}`);
  return `k8s.io/${match[1]}@${K8S_MODULE_VERSION}/${match[2]}`;
}

/** Parses one generated.proto (Kubernetes' generated files have no nested messages, enums or oneofs). */
export function readProtoFile(moduleCache: string, path: string): ProtoFile {
  const text = readFileSync(join(moduleCache, path), 'utf8')
    .replace(/\/\/[^\n]*/g, '')
    .replace(/\/\*[\s\S]*?\*\//g, '');
  const pkg = /package\s+([\w.]+);/.exec(text)![1]!;
  const imports = [...text.matchAll(/import\s+"([^"]+)";/g)].map((match) => moduleCachePath(match[1]!));
  const messages = new Map<string, Map<string, ProtoField>>();
  for (const match of text.matchAll(/message\s+(\w+)\s*\{([^{}]*)\}/g)) {
    const fields = new Map<string, ProtoField>();
    for (const line of match[2]!.split(';')) {
      const map = /^\s*map<\s*string\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)/.exec(line);
      if (map !== null) {
        fields.set(map[2]!, { name: map[2]!, number: Number(map[3]), type: 'map', repeated: true, mapValue: qualify(map[1]!, pkg) });
        continue;
      }
      const field = /^\s*(optional|repeated)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)/.exec(line);
      if (field === null) {
        if (/\S/.test(line)) throw new Error(`k8s-proto: ${path}: message ${match[1]}: a line not understood: ${line.trim()}`);
        continue;
      }
      fields.set(field[3]!, { name: field[3]!, number: Number(field[4]), type: qualify(field[2]!, pkg), repeated: field[1] === 'repeated' });
    }
    messages.set(`${pkg}.${match[1]}`, fields);
  }
  return { path, pkg, imports, messages };
}

/** Parses the messages of the .proto files at `paths` (module-cache relative) into one map by full name. */
export function loadProtoMessages(moduleCache: string, paths: readonly string[]): ProtoMessages {
  const messages = new Map<string, ReadonlyMap<string, ProtoField>>();
  for (const path of paths) for (const [name, fields] of readProtoFile(moduleCache, path).messages) messages.set(name, fields);
  return messages;
}

function qualify(type: string, pkg: string): string {
  if (SCALARS.has(type)) return type;
  if (type.startsWith('.')) return type.slice(1);
  return type.includes('.') ? type : `${pkg}.${type}`;
}

/** A struct field's tags as Go declares them: its protobuf field number and its JSON name ('' when inlined). */
export interface GoFieldTag {
  readonly number: number;
  readonly json: string;
  readonly inline: boolean;
}

/**
 * The struct tags of the Go types beside a generated.proto (same directory): type name → protobuf field number →
 * JSON name. The .proto names a field after its JSON name, except where Go's JSON inlines a member or the Go
 * author chose otherwise (admissionregistration's `Webhooks`): the tags say which.
 */
export function readGoFieldTags(moduleCache: string, protoPath: string): ReadonlyMap<string, ReadonlyMap<number, GoFieldTag>> {
  const dir = join(moduleCache, dirname(protoPath));
  const types = new Map<string, Map<number, GoFieldTag>>();
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.go') || file.endsWith('_test.go') || file.startsWith('zz_generated') || file === 'generated.pb.go') continue;
    const text = readFileSync(join(dir, file), 'utf8');
    // `type List metav1.List`: a type defined as another package's struct has that struct's tags.
    for (const defined of text.matchAll(/^type\s+(\w+)\s+(\w+)\.(\w+)\s*$/gm)) {
      const imported = new RegExp(`^\\s*(?:import\\s+)?${defined[2]}\\s+"(k8s\\.io/[^"]+)"`, 'm').exec(text);
      if (imported === null) continue;
      const tags = readGoFieldTags(moduleCache, moduleCachePath(`${imported[1]}/generated.proto`)).get(defined[3]!);
      if (tags !== undefined) types.set(defined[1]!, new Map(tags));
    }
    for (const struct of text.matchAll(/^type\s+(\w+)\s+struct\s*\{\n([\s\S]*?)^\}/gm)) {
      const tags = new Map<number, GoFieldTag>();
      for (const line of struct[2]!.split('\n')) {
        if (/^\s*\/\//.test(line)) continue;
        const protobuf = /protobuf:"[\w]+,(\d+),/.exec(line);
        const json = /json:"([^",]*)((?:,[\w]+)*)"/.exec(line);
        if (protobuf === null || json === null) continue;
        const inline = json[1] === '' && (json[2] ?? '').includes('inline');
        tags.set(Number(protobuf[1]), { number: Number(protobuf[1]), json: json[1]!, inline });
      }
      if (tags.size > 0) types.set(struct[1]!, tags);
    }
  }
  return types;
}

/** The API group a Kubernetes API package serves (register.go's `GroupName`; '' for core), or undefined. */
export function readGroupName(moduleCache: string, protoPath: string): string | undefined {
  const register = join(moduleCache, dirname(protoPath), 'register.go');
  if (!existsSync(register)) return undefined;
  const match = /^const\s+GroupName\s*=\s*"([^"]*)"/m.exec(readFileSync(register, 'utf8'));
  return match === null ? undefined : match[1]!;
}
