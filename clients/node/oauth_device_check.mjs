// RFC 8628 device flow with openid-client (unchanged) against the sandbox, in one of two modes:
//   discovery: the endpoints from /.well-known/oauth-authorization-server (RFC 8414);
//   manual:    configured by hand with the standard paths, no discovery at all.
// Prints the device authorization answer (a human approves its user_code meanwhile, e.g.
// clients/approve_device.py --from-transcript), polls for the token, and checks the key works
// and its welcome message. Exits 0 only if every step holds.
// usage: node oauth_device_check.mjs BASE_URL discovery|manual [CLIENT_ID]
import * as client from 'openid-client';

const [base, mode, clientId = `openid-client-${process.argv[3]}`] = process.argv.slice(2);
if (!base || !['discovery', 'manual'].includes(mode)) {
  console.error('usage: node oauth_device_check.mjs BASE_URL discovery|manual [CLIENT_ID]');
  process.exit(2);
}
const issuer = base.replace(/\/+$/, '');

let config;
if (mode === 'discovery') {
  // The sandbox is plain http on 127.0.0.1: the only relaxation, and a documented option.
  config = await client.discovery(new URL(issuer), clientId, undefined, client.None(), {
    algorithm: 'oauth2',
    execute: [client.allowInsecureRequests],
  });
} else {
  config = new client.Configuration(
    {
      issuer,
      device_authorization_endpoint: `${issuer}/oauth2/device_authorization`,
      token_endpoint: `${issuer}/oauth2/token`,
    },
    clientId,
    undefined,
    client.None(),
  );
  client.allowInsecureRequests(config);
}
const meta = config.serverMetadata();
console.log('mode:', mode, 'device endpoint:', meta.device_authorization_endpoint);

const device = await client.initiateDeviceAuthorization(config, { scope: 'read' });
console.log('device authorization:', JSON.stringify(device));
const tokens = await client.pollDeviceAuthorizationGrant(config, device);
const key = tokens.access_token;
console.log('token: type', tokens.token_type, 'scope', tokens.scope, 'key prefix', key?.slice(0, 17));
if (!key?.startsWith('svc_test_')) {
  console.log('FAIL: no sandbox key');
  process.exit(1);
}
const welcome = tokens.welcome_message ?? '';
console.log('welcome:', welcome);
if (tokens.scope !== 'read' || !welcome.includes('read public pages') || !welcome.includes('cannot')) {
  console.log('FAIL: a read key must be told it can only read');
  process.exit(1);
}
const usage = await fetch(`${issuer}/api/usage`, { headers: { Authorization: `Bearer ${key}` } });
console.log('usage with the new key:', usage.status);
if (usage.status !== 200) process.exit(1);
console.log('all good');
