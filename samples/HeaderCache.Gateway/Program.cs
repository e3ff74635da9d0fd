using HeaderCache.Gateway;

GatewayApp.Build(args).Run();
