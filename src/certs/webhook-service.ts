/** The webhook's Service by default: what `tenantgate certs` signs a serving certificate for (files.ts). */
export const WEBHOOK_SERVICE_NAME = 'tenantgate-webhook';
