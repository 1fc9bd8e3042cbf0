import { broker, containerEnv, type KubeObject } from '../support/kubernetes.ts';
import { FILE_SECRETS } from '../../server/src/config/config.ts';

/** A secret the broker reads from a file, and the Secret and key the kubelet puts there. */
export interface SecretRead {
  /** The broker's variable (FILE_SECRETS), read from `<variable>_FILE`. */
  variable: string;
  secret: string;
  key: string;
}

/**
 * Each secret the broker's container reads from a file of a Secret volume: its `*_FILE` variable,
 * the mount the path is under, the volume's Secret and the key at that path (an `items` entry's,
 * or the path's own name when the volume projects every key). A `*_FILE` in no Secret volume
 * throws: the broker would find no file there.
 */
export function secretReads(objects: KubeObject[]): SecretRead[] {
  const { container, pod } = broker(objects);
  const env = containerEnv(objects, container);
  return FILE_SECRETS.flatMap((variable) => {
    const file = env[`${variable}_FILE`];
    if (file === undefined) return [];
    const mount = container.volumeMounts?.find((each) => file.startsWith(`${each.mountPath}/`));
    const volume = pod.volumes?.find((each) => each.name === mount?.name) as
      { secret?: { secretName: string; items?: { key: string; path: string }[] } } | undefined;
    if (mount === undefined || volume?.secret === undefined)
      throw new Error(`${variable}_FILE=${file} is in no Secret volume of the pod`);
    const path = file.slice(mount.mountPath.length + 1);
    const { secretName, items } = volume.secret;
    const key = items === undefined ? path : items.find((each) => each.path === path)?.key;
    if (key === undefined)
      throw new Error(`${variable}_FILE=${file}: no item of ${secretName} at ${path}`);
    return [{ variable, secret: secretName, key }];
  });
}
