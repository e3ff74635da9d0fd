using HeaderCache.Caching;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Options;

namespace HeaderCache.Hosting;

/// <summary>Checks each setting on its own and names it, with the value it has, in the message.</summary>
internal sealed class HeaderCacheOptionsValidator : IValidateOptions<HeaderCacheOptions>
{
    /// <inheritdoc />
    public ValidateOptionsResult Validate(string? name, HeaderCacheOptions options)
    {
        var failures = new List<string>();
        if (options.SlotCount is < HeaderStringCache.MinSlotCount or > HeaderStringCache.MaxSlotCount)
        {
            failures.Add($"{HeaderCacheOptions.SectionName}:SlotCount is {options.SlotCount}; it must be {HeaderStringCache.MinSlotCount} to {HeaderStringCache.MaxSlotCount}.");
        }

        if (options.MaxValueLength is < 0 or > HeaderStringCache.MaxMaxLength)
        {
            failures.Add($"{HeaderCacheOptions.SectionName}:MaxValueLength is {options.MaxValueLength}; it must be 0 to {HeaderStringCache.MaxMaxLength}.");
        }

        if (options.LongValueBudget is < 0 or > LongValueCache.MaxBudget)
        {
            failures.Add($"{HeaderCacheOptions.SectionName}:LongValueBudget is {options.LongValueBudget}; it must be 0 to {LongValueCache.MaxBudget}.");
        }

        if ((options.Protocols & ~HttpProtocols.Http1AndHttp2AndHttp3) != 0)
        {
            failures.Add($"{HeaderCacheOptions.SectionName}:Protocols is {options.Protocols}; it must be {HeaderCacheConfiguration.ProtocolsRequirement}.");
        }

        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }
}
