from django.db import models

from ..profiles.models import Profile


class Reminder(models.Model):
    profile = models.ForeignKey(Profile, related_name='reminders')
    timestamp = models.DateTimeField(auto_now_add=True)

    def save(self, *args, **kwargs):
        # only a confirmed profile is sent a reminder; the SMS goes out on save
        if not self.profile.confirmed:
            raise Exception("Profile {} is not confirmed".format(self.profile.user.username))
        content = "Hey {}, how have things been since your last check-in?".format(self.profile.name)
        self.profile.contact.send_sms(content)
        return super(Reminder, self).save(*args, **kwargs)


def send_reminders():
    """Send an SMS reminder to every profile that should get one."""
    profiles = Profile.objects.confirmed_for_reminders()
    for p in profiles:
        Reminder.objects.create(profile=p)
