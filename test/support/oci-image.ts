/**
 * The image built by `make image`, unpacked and run without a container runtime: its layers are
 * extracted in order into a directory, and its entrypoint runs there in a private mount namespace
 * (`unshare -m`) on a read-only bind mount of that directory, chrooted as the image's user.
 */
import { execa, type ResultPromise } from 'execa';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface ImageConfig {
  Entrypoint: string[];
  Env: string[];
  User: string;
  WorkingDir: string;
}

export interface UnpackedImage {
  rootfs: string;
  /** The name the archive carries (containerd's io.containerd.image.name annotation). */
  name: string;
  manifestDigest: string;
  config: ImageConfig;
  /** Sum of the compressed layer sizes and of the uncompressed layer tars. */
  compressedBytes: number;
  unpackedBytes: number;
}

interface Descriptor {
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

const blobPath = (layout: string, digest: string) => join(layout, 'blobs', ...digest.split(':'));

/** Unpacks an OCI archive (as written by hack/build-image.sh) into `dir`: layout/ and rootfs/. */
export async function unpackImage(archive: string, dir: string): Promise<UnpackedImage> {
  const layout = join(dir, 'layout');
  const rootfs = join(dir, 'rootfs');
  await mkdir(layout, { recursive: true });
  await mkdir(rootfs, { recursive: true });
  await execa('tar', ['-xf', archive, '-C', layout]);
  const index = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  if (index.manifests.length !== 1)
    throw new Error(`${archive}: expected one image in index.json, found ${index.manifests.length}`);
  const [descriptor] = index.manifests as [Descriptor];
  const manifest = JSON.parse(await readFile(blobPath(layout, descriptor.digest), 'utf8')) as {
    config: Descriptor;
    layers: Descriptor[];
  };
  const config = (
    JSON.parse(await readFile(blobPath(layout, manifest.config.digest), 'utf8')) as { config: ImageConfig }
  ).config;
  let unpackedBytes = 0;
  for (const layer of manifest.layers) {
    const listing = (await execa('tar', ['-tzvf', blobPath(layout, layer.digest)])).stdout;
    if (/(^|\/)\.wh\./m.test(listing))
      throw new Error(`layer ${layer.digest} has whiteouts; this unpacker does not apply them`);
    unpackedBytes += Number(
      (await execa('sh', ['-c', 'gzip -dc "$0" | wc -c', blobPath(layout, layer.digest)])).stdout.trim(),
    );
    await execa('tar', [
      '-xzf',
      blobPath(layout, layer.digest),
      '-C',
      rootfs,
      '--same-owner',
      '--same-permissions',
      '--numeric-owner',
    ]);
  }
  return {
    rootfs,
    name: descriptor.annotations?.['io.containerd.image.name'] ?? '',
    manifestDigest: descriptor.digest,
    config,
    compressedBytes: manifest.layers.reduce((sum, l) => sum + l.size, 0),
    unpackedBytes,
  };
}

export interface RunOptions {
  /** uid:gid; the image's User by default. */
  user?: string;
  /** Host directory bind-mounted read-only at /run inside the image (configs, certs, a git checkout). */
  mountRun?: string;
  /** Working directory inside the image. */
  cwd?: string;
  env?: Record<string, string>;
  /** Replaces the image's entrypoint (e.g. ['/bin/sh', '-c', '...']). */
  entrypoint?: string[];
  reject?: boolean;
  timeoutMs?: number;
}

// $0 rootfs, $1 directory for /run (or ""), $2 working directory, then the command.
const CONTAINER_SCRIPT = `
set -e
root=$0; run=$1; cwd=$2; user=$3; shift 3
mount --bind "$root" "$root"
mount -o remount,bind,ro "$root"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
if [ -n "$run" ]; then mount --bind "$run" "$root/run"; mount -o remount,bind,ro "$root/run"; fi
exec chroot --userspec="$user" "$root" /bin/sh -c 'cd "$0" && exec "$@"' "$cwd" "$@"
`;

/** Starts the image's entrypoint (or `entrypoint`) with `args` as a container runtime would, read-only. */
export function startInImage(image: UnpackedImage, args: string[], options: RunOptions = {}): ResultPromise {
  const env: Record<string, string> = {};
  for (const entry of image.config.Env) {
    const at = entry.indexOf('=');
    env[entry.slice(0, at)] = entry.slice(at + 1);
  }
  const command = [...(options.entrypoint ?? image.config.Entrypoint), ...args];
  return execa(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '--',
      'sh',
      '-c',
      CONTAINER_SCRIPT,
      image.rootfs,
      options.mountRun ?? '',
      options.cwd ?? (image.config.WorkingDir || '/'),
      options.user ?? image.config.User,
      ...command,
    ],
    {
      env: { ...env, ...options.env },
      extendEnv: false,
      reject: options.reject ?? true,
      timeout: options.timeoutMs ?? 120_000,
    },
  );
}

export interface RunResult {
  stdout: string;
  stderr: string;
  exitCode: number | undefined;
}

/** Runs a command in the image to completion (see startInImage). */
export async function runInImage(image: UnpackedImage, args: string[], options: RunOptions = {}): Promise<RunResult> {
  const result = await startInImage(image, args, options);
  return { stdout: String(result.stdout), stderr: String(result.stderr), exitCode: result.exitCode };
}
