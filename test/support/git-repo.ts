/** A local git repository Argo CD reads through a file:// URL (as Argo CD's own e2e suite does). */
import { execa } from 'execa';
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

export class LocalGitRepo {
  private constructor(readonly dir: string) {}

  get url(): string {
    return `file://${this.dir}`;
  }

  static async init(dir: string): Promise<LocalGitRepo> {
    await mkdir(dir, { recursive: true });
    const repo = new LocalGitRepo(dir);
    await repo.git(['init', '--quiet', '--initial-branch=main']);
    return repo;
  }

  private git(args: string[]) {
    return execa(
      'git',
      [
        '-c',
        'user.name=tenantgate e2e',
        '-c',
        'user.email=e2e@tenantgate.invalid',
        '-c',
        'commit.gpgsign=false',
        ...args,
      ],
      { cwd: this.dir },
    );
  }

  /** Copies a directory of the checkout into the repository at `path`. */
  async copyIn(source: string, path: string): Promise<void> {
    await cp(source, join(this.dir, path), { recursive: true });
  }

  /** Writes (string) or deletes (null) files, commits everything, returns the commit's sha. */
  async commit(message: string, files: Record<string, string | null> = {}): Promise<string> {
    for (const [path, text] of Object.entries(files)) {
      const file = join(this.dir, path);
      if (text === null) {
        await rm(file, { force: true });
      } else {
        await mkdir(dirname(file), { recursive: true });
        await writeFile(file, text);
      }
    }
    await this.git(['add', '--all']);
    await this.git(['commit', '--quiet', '--allow-empty', '-m', message]);
    return (await this.git(['rev-parse', 'HEAD'])).stdout.trim();
  }
}
