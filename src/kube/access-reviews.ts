/**
 * TokenReview and SubjectAccessReview against the apiserver: the I/O of the controller's metrics
 * access check (src/controller/metrics-access.ts). Needs `create` on tokenreviews
 * (authentication.k8s.io) and subjectaccessreviews (authorization.k8s.io), as any delegating server.
 */
import * as k8s from '@kubernetes/client-node';

/** The user a TokenReview returns (status.user). */
export interface ReviewedUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export type Authentication = { authenticated: true; user: ReviewedUser } | { authenticated: false; error?: string };
export interface Authorization {
  allowed: boolean;
  reason?: string;
}

export interface AccessReviews {
  /** TokenReview of `token`. Rejects when the apiserver does not answer. */
  authenticate(token: string): Promise<Authentication>;
  /** SubjectAccessReview: may `user` get the non-resource URL `path`? Rejects when the apiserver does not answer. */
  authorize(user: ReviewedUser, path: string, verb: 'get'): Promise<Authorization>;
}

export function apiserverAccessReviews(kubeConfig: k8s.KubeConfig): AccessReviews {
  const authentication = kubeConfig.makeApiClient(k8s.AuthenticationV1Api);
  const authorization = kubeConfig.makeApiClient(k8s.AuthorizationV1Api);
  return {
    async authenticate(token: string): Promise<Authentication> {
      const review = await authentication.createTokenReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
      });
      const status = review.status;
      if (!status?.authenticated || !status.user?.username)
        return { authenticated: false, ...(status?.error ? { error: status.error } : {}) };
      const u = status.user;
      return {
        authenticated: true,
        user: {
          username: u.username!,
          ...(u.uid ? { uid: u.uid } : {}),
          ...(u.groups ? { groups: u.groups } : {}),
          ...(u.extra ? { extra: u.extra } : {}),
        },
      };
    },
    async authorize(user: ReviewedUser, path: string, verb: 'get'): Promise<Authorization> {
      const review = await authorization.createSubjectAccessReview({
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: user.username,
            ...(user.uid ? { uid: user.uid } : {}),
            ...(user.groups ? { groups: user.groups } : {}),
            ...(user.extra ? { extra: user.extra } : {}),
            nonResourceAttributes: { path, verb },
          },
        },
      });
      const status = review.status;
      return {
        allowed: status?.allowed === true && status.denied !== true,
        ...(status?.reason ? { reason: status.reason } : {}),
      };
    },
  };
}
