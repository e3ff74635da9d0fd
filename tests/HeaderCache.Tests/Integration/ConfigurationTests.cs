using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace HeaderCache.Tests.Integration;

/// <summary>
/// The <c>HeaderCache</c> section as a user writes it in <c>appsettings.json</c>: a real host reading a real JSON file
/// (reloaded on change), its log captured.
/// </summary>
public sealed class ConfigurationTests
{
    private const int UnknownSettingEvent = 20;

    private const string ProtocolsMustBe = "Http1, Http2, Http1AndHttp2 or None (Kestrel's HttpProtocols; Http3 is accepted and changes nothing).";

    [Theory]
    [InlineData("\"Http1\"", HttpProtocols.Http1, "active")]
    [InlineData("\"http2\"", HttpProtocols.Http2, "inactive")]
    [InlineData("\"Http1, Http2\"", HttpProtocols.Http1AndHttp2, "active")]
    [InlineData("\"Http1AndHttp2AndHttp3\"", HttpProtocols.Http1AndHttp2AndHttp3, "active")]
    [InlineData("\"None\"", HttpProtocols.None, "inactive")]
    public async Task Protocols_binds_Kestrels_names_and_an_HTTP1_connection_gets_the_cache_only_where_it_names_Http1(string value, HttpProtocols bound, string state)
    {
        using var settings = new SettingsFile($$"""{ "HeaderCache": { "Protocols": {{value}} } }""");
        await using var server = await Server.StartAsync(settings);

        Assert.Equal(bound, server.Options.CurrentValue.Protocols);
        Assert.Equal(state, await server.GetAsync());
        Assert.Empty(server.UnknownSettingWarnings);
    }

    [Fact]
    public async Task An_unknown_key_at_startup_is_reported_once_with_the_nearest_setting_and_costs_no_connection()
    {
        using var settings = new SettingsFile("""{ "HeaderCache": { "SlotCuont": 64, "MaxValueLength": 128 } }""");
        await using var server = await Server.StartAsync(settings);

        for (int request = 0; request < 5; request++)
        {
            Assert.Equal("active", await server.GetAsync());
        }

        (LogLevel Level, string Message) warning = Assert.Single(server.UnknownSettingWarnings);
        Assert.Equal(LogLevel.Warning, warning.Level);
        Assert.Equal(
            "HeaderCache:SlotCuont is not a HeaderCache setting, so it is ignored. Did you mean SlotCount? The settings are Enabled, Protocols, AllowUntestedKestrelVersion, SlotCount, MaxValueLength, LongValueBudget, ExcludedHeaders.",
            warning.Message);
        Assert.Equal(128, server.Options.CurrentValue.MaxValueLength);
        Assert.Equal(25, server.Options.CurrentValue.SlotCount);
    }

    [Fact]
    public async Task An_unknown_key_edited_in_while_running_is_reported_once_when_it_appears_and_costs_no_connection()
    {
        using var settings = new SettingsFile("""{ "HeaderCache": { "SlotCount": 25 } }""");
        await using var server = await Server.StartAsync(settings);
        Assert.Empty(server.UnknownSettingWarnings);

        await settings.WriteAsync("""{ "HeaderCache": { "SlotCount": 25, "ExcludedHeader": [ "Authorization" ] } }""");
        await Server.WaitForAsync(() => server.UnknownSettingWarnings.Count > 0);
        Assert.Equal("active", await server.GetAsync());

        // Later edits that keep the key do not report it again; the setting next to it still applies.
        await settings.WriteAsync("""{ "HeaderCache": { "SlotCount": 64, "ExcludedHeader": [ "Authorization" ] } }""");
        await Server.WaitForAsync(() => server.Options.CurrentValue.SlotCount == 64);
        Assert.Equal("active", await server.GetAsync());

        (LogLevel Level, string Message) warning = Assert.Single(server.UnknownSettingWarnings);
        Assert.Equal(LogLevel.Warning, warning.Level);
        Assert.StartsWith("HeaderCache:ExcludedHeader is not a HeaderCache setting, so it is ignored. Did you mean ExcludedHeaders?", warning.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("\"SlotCount\": \"abc\"", "HeaderCache:SlotCount is \"abc\"; it must be a whole number from 1 to 256.")]
    [InlineData("\"MaxValueLength\": \"1k\"", "HeaderCache:MaxValueLength is \"1k\"; it must be a whole number from 0 to 8192.")]
    [InlineData("\"Enabled\": \"yes\"", "HeaderCache:Enabled is \"yes\"; it must be true or false.")]
    [InlineData("\"AllowUntestedKestrelVersion\": \"on\"", "HeaderCache:AllowUntestedKestrelVersion is \"on\"; it must be true or false.")]
    [InlineData("\"SlotCount\": 0", "HeaderCache:SlotCount is 0; it must be 1 to 256.")]
    [InlineData("\"LongValueBudget\": \"16k\"", "HeaderCache:LongValueBudget is \"16k\"; it must be a whole number from 0 to 65536.")]
    [InlineData("\"LongValueBudget\": -1", "HeaderCache:LongValueBudget is -1; it must be 0 to 65536.")]
    [InlineData("\"Protocols\": \"Http4\"", "HeaderCache:Protocols is \"Http4\"; it must be " + ProtocolsMustBe)]
    [InlineData("\"Protocols\": \"64\"", "HeaderCache:Protocols is 64; it must be " + ProtocolsMustBe)]
    public async Task A_bad_value_at_startup_fails_with_one_line_naming_the_setting_the_value_and_what_it_must_be(string setting, string line)
    {
        using var settings = new SettingsFile($$"""{ "HeaderCache": { {{setting}} } }""");

        OptionsValidationException thrown = await Assert.ThrowsAsync<OptionsValidationException>(() => Server.StartAsync(settings));

        Assert.Equal(line, thrown.Message);
        Assert.Equal([line], thrown.Failures);
        Assert.Null(thrown.InnerException);

        // What a console log or an unhandled-exception report prints first: the type and that line, then the stack.
        Assert.Equal($"{typeof(OptionsValidationException).FullName}: {line}", thrown.ToString().Split(Environment.NewLine)[0]);
    }

    [Fact]
    public async Task A_value_that_cannot_be_read_edited_in_while_running_is_logged_once_by_name_and_the_last_valid_options_stay()
    {
        using var settings = new SettingsFile("""{ "HeaderCache": { "SlotCount": 40 } }""");
        await using var server = await Server.StartAsync(settings);

        await settings.WriteAsync("""{ "HeaderCache": { "SlotCount": "forty" } }""");
        await Server.WaitForAsync(() => server.InvalidOptions.Count > 0);
        for (int request = 0; request < 5; request++)
        {
            Assert.Equal("active", await server.GetAsync());
        }

        Assert.Equal(
            "HeaderCache's configuration is invalid, so new connections keep the last valid options: HeaderCache:SlotCount is \"forty\"; it must be a whole number from 1 to 256.",
            Assert.Single(server.InvalidOptions));
    }

    [Theory]
    [InlineData("samples/HeaderCache.Sample/appsettings.json")]
    [InlineData("samples/HeaderCache.Gateway/appsettings.json")]
    public async Task The_samples_settings_name_only_real_settings(string path)
    {
        string file = RepositoryFiles.PathOf(path);
        Assert.True(File.Exists(file), $"{file} is missing");
        using var settings = new SettingsFile(await File.ReadAllTextAsync(file));
        await using var server = await Server.StartAsync(settings);

        Assert.Equal("active", await server.GetAsync());
        Assert.Empty(server.UnknownSettingWarnings);
        Assert.NotEmpty(new ConfigurationBuilder().AddJsonFile(file).Build().GetSection(HeaderCacheOptions.SectionName).GetChildren());
    }

    /// <summary>An <c>appsettings.json</c> of its own in a temporary folder.</summary>
    private sealed class SettingsFile : IDisposable
    {
        public SettingsFile(string json) => File.WriteAllText(PathName, json);

        public string Folder { get; } = Directory.CreateTempSubdirectory("headercache-settings-").FullName;

        private string PathName => Path.Combine(Folder, "appsettings.json");

        public Task WriteAsync(string json) => File.WriteAllTextAsync(PathName, json);

        public void Dispose() => Directory.Delete(Folder, recursive: true);
    }

    /// <summary>A web app with the one line, its settings from <see cref="SettingsFile"/>; every request answers whether
    /// its connection is read through the cache.</summary>
    private sealed class Server : IAsyncDisposable
    {
        private readonly WebApplication _app;
        private readonly CapturingLoggerProvider _logs;
        private readonly HttpClient _client;

        private Server(WebApplication app, CapturingLoggerProvider logs, Uri address)
        {
            _app = app;
            _logs = logs;

            // A new connection for every request: each one is admitted with the options of its moment.
            _client = new HttpClient(new SocketsHttpHandler { PooledConnectionLifetime = TimeSpan.Zero }) { BaseAddress = address };
        }

        public IOptionsMonitor<HeaderCacheOptions> Options => _app.Services.GetRequiredService<IOptionsMonitor<HeaderCacheOptions>>();

        public IReadOnlyList<(LogLevel Level, string Message)> UnknownSettingWarnings =>
            [.. _logs.HeaderCache.Where(e => e.Id.Id == UnknownSettingEvent).Select(e => (e.Level, e.Message))];

        public IReadOnlyList<string> InvalidOptions => [.. _logs.HeaderCache.Where(e => e.Id.Id == 5).Select(e => e.Message)];

        public static async Task<Server> StartAsync(SettingsFile settings)
        {
            var logs = new CapturingLoggerProvider();
            // The folder is the content root, so its appsettings.json is read, and reloaded on change, as an app's is.
            WebApplicationBuilder builder = WebApplication.CreateBuilder(new WebApplicationOptions
            {
                Args = ["--urls", "http://127.0.0.1:0"],
                ContentRootPath = settings.Folder,
            });
            builder.Logging.ClearProviders();
            builder.Logging.AddProvider(logs);
            builder.WebHost.UseHeaderStringCache();
            WebApplication app = builder.Build();
            app.Run(context => context.Response.WriteAsync(context.Features.Get<IHeaderStringCacheFeature>() is { IsActive: true } ? "active" : "inactive"));
            try
            {
                await app.StartAsync();
            }
            catch
            {
                await app.DisposeAsync();
                throw;
            }

            string address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.First();
            return new Server(app, logs, new Uri(address));
        }

        public Task<string> GetAsync() => _client.GetStringAsync(new Uri("/", UriKind.Relative));

        public static async Task WaitForAsync(Func<bool> condition)
        {
            for (int attempt = 0; !condition(); attempt++)
            {
                Assert.True(attempt < 100, "the edit was not seen within 10 s");
                await Task.Delay(100);
            }
        }

        public async ValueTask DisposeAsync()
        {
            _client.Dispose();
            await _app.StopAsync();
            await _app.DisposeAsync();
        }
    }
}
