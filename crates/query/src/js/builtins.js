// Riak's JavaScript built-ins, written for Eddy from their documented
// behaviour. Loaded into every JavaScript context before any job runs.
var Riak = (function () {
  function isNotFound(v) {
    return v !== null && typeof v === "object" && v.not_found !== undefined;
  }
  function firstData(v) {
    return v.values[0].data;
  }
  function mapValues(v) {
    if (isNotFound(v)) return [v];
    var d = firstData(v);
    return Array.isArray(d) ? d : [d];
  }
  function mapValuesJson(v) {
    if (isNotFound(v)) return [v];
    return mapValues(v).map(function (d) { return JSON.parse(d); });
  }
  function filterNotFound(values) {
    return values.filter(function (v) { return !isNotFound(v); });
  }
  function numeric(a, b) { return a - b; }
  function pick(values, better) {
    if (values.length === 0) return [];
    var best = values[0];
    for (var i = 1; i < values.length; i++) {
      if (better(values[i], best)) best = values[i];
    }
    return [best];
  }
  return {
    getClassName: function (o) {
      if (o === null || o === undefined) return undefined;
      return Object.prototype.toString.call(o).slice(8, -1);
    },
    filterNotFound: filterNotFound,
    mapValues: mapValues,
    mapValuesJson: mapValuesJson,
    mapByFields: function (v, keyData, fields) {
      if (isNotFound(v)) return [];
      var o = mapValuesJson(v)[0];
      for (var f in fields) {
        if (o[f] != fields[f]) return [];
      }
      return [o];
    },
    reduceSum: function (values) {
      var sum = 0;
      filterNotFound(values).forEach(function (v) { sum += v; });
      return [sum];
    },
    reduceMin: function (values) {
      return pick(values, function (a, b) { return a < b; });
    },
    reduceMax: function (values) {
      return pick(values, function (a, b) { return a > b; });
    },
    reduceSort: function (values, arg) {
      var cmp;
      if (typeof arg === "string" && arg.length > 0) {
        try { cmp = (0, eval)("(" + arg + ")"); } catch (e) { cmp = undefined; }
      }
      return typeof cmp === "function" ? values.sort(cmp) : values.sort();
    },
    reduceNumericSort: function (values) {
      return values.sort(numeric);
    },
    reduceLimit: function (values, arg) {
      return values.slice(0, arg);
    },
    reduceSlice: function (values, arg) {
      return values.slice(arg[0], arg[1]);
    }
  };
})();
