// Placeholder: being written (see runtime/Plan.h, runtime/Steps.h).
