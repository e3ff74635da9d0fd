using HeaderCache.Sample;

SampleApp.Build(args).Run();
